"""Several captures read as one (capture/merge.py): the same TCP connection seen by two taps made one connection,
each byte taken once, and an exchange seen from both ends of the network timed on each side.

`Joiner` (joined.py) decides, packet by packet, which connection of which tap a packet belongs to and whether it
only repeats what another tap showed first; `Vantages` (vantage.py) names the taps that saw each connection and
splits an exchange's latency into broker and network time; `TappedDissector` (dissector.py) puts both around the core.
"""
