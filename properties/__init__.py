"""properties — the laws, their strategies, error metrics and bounds, implementation loading and reports."""

__version__ = "0.1.0"
