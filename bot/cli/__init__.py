"""The `gpuwhy` command line: one module per command group, loaded only when it runs."""
