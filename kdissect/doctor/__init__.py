"""`kdissect doctor`: findings about a capture (what is wrong, why, what to do), made from the core's events.

A floor above the core: it reads `events/` and the decoded bodies, and the views and commands use it.
`engine.Doctor` runs every family of rules (groups, consumers, producers, protocol, latency, capture); each
rule is data (`rule.Rule`) with thresholds that `--explain` documents and `--set` changes.
"""
