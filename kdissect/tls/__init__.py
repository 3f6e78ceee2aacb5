"""TLS between TCP and Kafka: the record layer, the hellos, key logs, key schedules, AEAD, and one decryptor
per connection that turns a direction's ciphertext stream into the plaintext stream the Kafka framer reads."""
