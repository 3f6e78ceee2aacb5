#!/usr/bin/env bash
# Install what the capture rig needs on a Debian machine (run as root).
# System tools: tcpdump (capture), kcat (a client), iproute2 + ethtool (namespaces, offloads),
# stunnel4 + openssl (TLS in front of the broker, a KeyUpdating client), tshark (its editcap embeds key logs
# in pcapng for tls13-secrets-kafka-python; otherwise optional, to look at the captures), nodejs + npm (KafkaJS).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq tcpdump kcat iproute2 ethtool stunnel4 openssl
command -v npm >/dev/null || apt-get install -y -qq nodejs npm
apt-get install -y -qq tshark || echo "tshark not installed (needed by tls13-secrets-kafka-python only)"
python -m pip install -q -r "$here/requirements.txt"
# KafkaJS 2.2.4 and 1.12.0, as package-lock.json pins them (rig/node/node_modules, not committed)
(cd "$here/node" && npm ci --no-audit --no-fund)
