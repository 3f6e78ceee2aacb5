"""The capture rig: real Kafka clients against a real (tansu) broker, recorded with tcpdump.

It makes the ``captures/`` corpus and its manifests (the ground truth the
decoder's tests compare against). See ``rig/README.md``. The broker start-up in
:mod:`rig.broker` is reusable on its own by tests.
"""
