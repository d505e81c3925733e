"""The one sanitiser (hipwizard/textsafe.py): table-driven over hostile strings."""

from __future__ import annotations

import pytest

from hipwizard import textsafe
from tests.hostile_text import HOSTILE, assert_inert


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_every_variant_leaves_nothing_that_acts_on_a_terminal(name):
    for fn in (textsafe.inert, textsafe.inert_line, textsafe.markup, textsafe.markdown):
        out = fn(HOSTILE[name])
        assert_inert(out)
        assert "AMD" in out  # the text around the sequence stays


@pytest.mark.parametrize("raw, clean", [
    ("a\x1b]52;c;ZGF0YQ==\x07b", "ab"),            # OSC 52, BEL-terminated
    ("a\x1b]52;c;ZGF0YQ==\x1b\\b", "ab"),          # OSC 52, ST-terminated
    ("a\x1b]0;title\x07b", "ab"),                  # OSC 0
    ("a\x1bPq#0;2;0;0;0\x1b\\b", "ab"),            # DCS (sixel)
    ("a\x1b_Gf=100;AAAA\x1b\\b", "ab"),            # APC (kitty graphics)
    ("a\x1b^pm\x1b\\b", "ab"), ("a\x1bXsos\x1b\\b", "ab"),
    ("a\x9b2Jb", "ab"), ("a\x9d0;t\x9cb", "ab"),     # 8-bit CSI, OSC
    ("a\x1b[1;31mb\x1b[0m", "ab"), ("a\x1b7b\x1b8", "ab"), ("a\x1b(Bb", "ab"), ("a\x1bcb", "ab"),
    ("a\x1b", "a"), ("a\x00\x08\x7f\x85b", "ab"), ("a\rb", "ab"),
    ("a\u202eb\u2066c", "abc"),                    # bidi override / isolate
    ("a\x1b]0;unterminated\nb", "a\nb"),           # an unterminated string ends at the line
    ("Instinct MI300X é 漢字 🚀\tx\ny", "Instinct MI300X é 漢字 🚀\tx\ny"),
    ("bad \udcff name", "bad \ufffd name"),
])
def test_inert(raw, clean):
    assert textsafe.inert(raw) == clean


def test_inert_line_is_one_line_and_keep_chooses_controls():
    assert textsafe.inert_line("a\nb\tc\rd") == "a b c d"
    assert textsafe.inert("a\r\nb", keep="\r\n") == "a\r\nb"
    assert textsafe.inert(42) == "42"


@pytest.mark.parametrize("raw", ["[bold]x[/]", "a[/]", "[$accent]x", "x\\[bold]y", "end\\", "[@click=quit]q",
                                 "[link=http://x]y[/link]"])
def test_markup_shows_the_text_as_it_is(raw):
    from textual.content import Content

    assert Content.from_markup(textsafe.markup(raw)).plain.rstrip("\u200b") == raw
    assert Content.from_markup("[b]" + textsafe.markup(raw) + "[/b]").plain.rstrip("\u200b") == raw


def test_markdown_neutralises_html_links_math_and_cells():
    md = textsafe.markdown(HOSTILE["script"] + HOSTILE["link"] + HOSTILE["math"] + "\n# h")
    assert "<" not in md and ">" not in md and "&lt;script&gt;" in md
    assert "](" not in md.replace("\\](", "") and "\\[click\\]" in md
    assert "\\$x^2\\$" in md and "\\|" in md and "\n" not in md
    assert textsafe.markdown("# title").startswith("\\#")
    assert textsafe.markdown("a\\[b") == "a\\\\\\[b"  # a backslash cannot un-escape the bracket


def test_inert_stream_and_the_cli_stdout(capsys):
    import io
    import sys

    buf = io.StringIO()
    stream = textsafe.InertStream(buf)
    assert stream.write("a\x1b]0;t\x07b\n") == len("a\x1b]0;t\x07b\n")
    stream.writelines(["\x9b2Jc\t", "d\x1b"])
    assert buf.getvalue() == "ab\nc\td" and stream.getvalue() == buf.getvalue()  # other attributes delegate
    outer = sys.stdout
    with textsafe.inert_stdout():
        print("x\x1b]52;c;ZGF0YQ==\x07y")
    assert sys.stdout is outer and capsys.readouterr().out == "xy\n"
