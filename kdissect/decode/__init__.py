"""The schema-driven message decoder: compiled per (API key, version, direction), with spans and diagnostics."""
