"""`kdissect browse`: the interactive terminal browser (Textual) over a capture's exchanges.

index.py keeps a compact row per exchange, built by a background pass; scan.py reads the capture again for what
the index does not hold (a body on demand, the exchanges a new filter matches, a filtered set written out);
app.py and the widgets show them. Everything it shows of one exchange is `show`'s own rendering (views/detail.py).
"""
