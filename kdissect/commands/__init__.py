"""The commands' shared parts and the commands that live in their own module (live, spark)."""
