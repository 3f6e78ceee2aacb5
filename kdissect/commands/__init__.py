"""The commands' shared parts and the commands that live in their own module (live, spark).

A command imports the dissector, the doctor and the views it uses inside its function, so that each command (and
`--help`) loads only its own. Measured: with every such import outside pipeline/ and browse/ made at start instead,
`kdissect --help` takes 2.14x the CPU time and `kdissect read captures/client-confluent.pcap` 1.25x (whole processes,
15 alternated pairs, medians). Textual (browse, live's screen) adds 0.49 s to a 0.07 s start (python -X importtime).
"""
