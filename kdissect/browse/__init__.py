"""`kdissect browse`: the interactive terminal browser (Textual) over a capture's exchanges.

indexer.py's pass (a worker) makes index.py's compact rows, one per exchange; scan.py reads the capture again for
what the index does not hold (a body on demand, the exchanges a new filter matches, a filtered set written out);
app.py wires the panes that show them, a module each. Everything it shows of one exchange is `show`'s own
rendering (views/detail.py), its captured words escaped (wire_text.py).
"""
