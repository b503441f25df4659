"""The SDK version, sent as the User-Agent."""

__version__ = "0.1.0"
