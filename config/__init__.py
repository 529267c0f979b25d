"""Property keys, value parsing and the effective configuration (see DESIGN.md, "Property keys")."""

from config.errors import ConfigError
from config.keys import KeyType, PropertyKey, Registry
from config.loader import Config, Setting, Source, load_config

__all__ = [
    "Config",
    "ConfigError",
    "KeyType",
    "PropertyKey",
    "Registry",
    "Setting",
    "Source",
    "load_config",
]
