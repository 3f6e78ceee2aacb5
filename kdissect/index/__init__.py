"""A capture asked twice is read once: the first full `read` of a capture keeps a compact index of its exchanges
in the cache (entry.py, made by keeping.py), and the next `read -Y` answers from it (answer.py): the filter's
verdict from headers is taken on the index's rows, and only the frames of the exchanges it may keep are read back
from the file and decoded. docs/index.md tells what is indexed and when the index is used."""
