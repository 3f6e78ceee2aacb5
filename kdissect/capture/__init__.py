"""Packets in: capture files (pcap, pcapng, gzip) and live interfaces, as `Packet` values."""

from kdissect.capture.packet import Packet
from kdissect.capture.source import CaptureError, CaptureFile, open_capture

__all__ = ["CaptureError", "CaptureFile", "Packet", "open_capture"]
