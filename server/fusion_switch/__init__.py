"""fusion-switch: editor and command-line companion for CANN fusion anomaly detection."""

__version__ = "0.1.0"
