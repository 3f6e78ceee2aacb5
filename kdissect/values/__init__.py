"""Record keys and values read for what they say (docs/values.md): a schema registry's framing detected and named
(framing.py), the schemas a run knows (schemas.py) from a folder (directory.py), a registry (registry.py) or the
capture itself (answers.py, http_sink.py), and the values decoded by Avro's, Protobuf's and JSON's own libraries
(avro.py, protobuf.py, json_values.py) through one reader (reader.py)."""
