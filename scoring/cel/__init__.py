"""CEL device selectors, as Kubernetes' DRA allocator evaluates them (pure: no I/O).

A DeviceClass or a claim request selects devices with CEL expressions over ``device.driver``,
``device.attributes["<domain>"].<name>`` and ``device.capacity["<domain>"].<name>``. The
language itself is cel-python's; Kubernetes adds its quantity and semver libraries, which are
defined here: ``quantity()``, ``isQuantity()``, ``semver()``, ``isSemver()`` and the methods
``compareTo``, ``isGreaterThan``, ``isLessThan``, ``add``, ``sub``, ``sign``, ``isInteger``,
``asInteger``, ``asApproximateFloat``, ``major``, ``minor``, ``patch``.

An expression that cannot be parsed or evaluated raises ``SelectorError`` with the reason:
callers say the selector was not evaluated and never guess its result.
"""
