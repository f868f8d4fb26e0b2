"""Request limits every cluster read shares (here so option parsing needs no API client)."""

DEFAULT_TIMEOUT = 10.0  # seconds per request
DEFAULT_PAGE_SIZE = 500
