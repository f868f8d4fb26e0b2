"""The HTTP side of `gpuwhy serve`: the server, its routes, and the Prometheus metrics."""
