"""Rendering ``dora-site.properties.template`` from the registry, so it never drifts."""

from __future__ import annotations

from pathlib import Path

from config.keys import Registry

TEMPLATE_PATH = Path(__file__).with_name("dora-site.properties.template")

_HEADER = """\
# dora-site.properties — every property key with its default and meaning.
# Generated from the key registry by `dora conf template`; do not edit by hand.
# Copy the lines you need into $DORA_CONF_DIR/dora-site.properties (or pass --conf FILE),
# uncomment them and set your values. Precedence, lowest first: defaults < this file <
# environment (DORA_ + key upper-cased, dots to underscores) < -Dkey=value < per-call options.
"""


def render_template(registry: Registry) -> str:
    """The template text: one commented block per key."""
    blocks = [_HEADER]
    for key in registry:
        lines = [f"# {key.description}", f"# Type: {key.expected()}."]
        if key.alias:
            lines.append(f"# Alluxio name: {key.alias}")
        if key.secret:
            lines.append("# Secret: masked in `dora conf list`.")
        lines.append(f"# {key.name}={key.default or ''}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"
