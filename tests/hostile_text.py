"""Hostile strings for the text-safety tests: each is what a pasted GPU name, a capture's device name, a run
or file name could hold. ``assert_inert`` checks that nothing of them can act on a terminal or a document."""

from __future__ import annotations

HOSTILE = {
    "osc52_bel": "AMD \x1b]52;c;ZWNobyBwd25lZA==\x07Instinct",
    "osc52_st": "AMD \x1b]52;c;ZWNobyBwd25lZA==\x1b\\Instinct",
    "osc0_title": "AMD \x1b]0;pwned title\x07Instinct",
    "dcs": "AMD \x1bP1$tpwned\x1b\\Instinct",
    "apc": "AMD \x1b_apc payload\x1b\\Instinct",
    "c1_csi": "AMD \x9b31mInstinct\x9b0m",
    "c1_osc": "AMD \x9d0;t\x9cInstinct",
    "bare_esc": "AMD \x1bc\x1b Instinct\x1b",
    "csi": "AMD \x1b[2J\x1b[31mInstinct\x1b[0m",
    "script": "AMD <script>alert(1)</script><img src=x onerror=alert(2)> Instinct",
    "markup": "AMD [bold]Instinct[/] [/] [$accent]x",
    "math": "AMD $x^2$ Instinct $\\alpha$",
    "link": "AMD [click](javascript:alert(1)) ![i](http://x/y.png) | cell",
}

FORBIDDEN = ("\x1b", "\x9b", "\x9d", "\x07", "\x90", "\x9c", "\x9f")


def assert_inert(text: str) -> None:
    for ch in FORBIDDEN:
        assert ch not in text, f"{ch!r} reached the output: {text[-800:]!r}"
