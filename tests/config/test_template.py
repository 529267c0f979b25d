from config.template import TEMPLATE_PATH, render_template
from worker.keys import build_registry


def test_template_file_is_current() -> None:
    expected = render_template(build_registry())
    assert TEMPLATE_PATH.read_text() == expected, (
        "config/dora-site.properties.template is stale: run "
        "`dora conf template > config/dora-site.properties.template`"
    )


def test_template_lists_every_key_with_default() -> None:
    text = TEMPLATE_PATH.read_text()
    for key in build_registry():
        assert f"# {key.name}={key.default or ''}\n" in text
