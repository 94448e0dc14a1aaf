"""The committed leaderboard page in a real browser: headless Chromium (Debian's ``chromium``, which
``.ci/run`` installs where it can) loads ``leaderboard/LEADERBOARD.html`` from disk and the test checks
that every benchmark section renders, that clicking a column header reorders the rows, that nothing
is logged as an error, and that the page itself does not scroll sideways at 1280 and 390 pixels wide
(wide tables scroll inside their own box). Skipped, with the reason, only where no Chromium is found.
"""

from __future__ import annotations

import pytest

from tests.browser import Browser, find_chromium
from tests.conftest import REPO

PAGE = REPO / "leaderboard" / "LEADERBOARD.html"
CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (Debian: apt-get install "
                                                          "chromium; .ci/run installs it; or set GRADEBENCH_CHROMIUM)")

#: per section: shown (has a box), its table's row count, and whether each row is laid out
SECTIONS = """Array.from(document.querySelectorAll('section.bench')).map(s => ({
  name: s.getAttribute('data-benchmark'), height: s.getBoundingClientRect().height,
  rows: s.querySelectorAll('table.board tbody tr').length,
  laidOut: Array.from(s.querySelectorAll('table.board tbody tr')).every(r => r.getBoundingClientRect().height > 0),
  svgs: s.querySelectorAll('table.board svg.iv').length}))"""
FITS = "[document.documentElement.scrollWidth, window.innerWidth, document.body.scrollWidth]"


def _column(b: Browser, table: str, header: str) -> dict:
    """Scroll the header into view; its centre and index."""
    return b.evaluate(f"""(() => {{ const t = document.querySelector({table!r});
      const h = Array.from(t.tHead.rows[0].cells).find(c => c.textContent.trim().startsWith({header!r}));
      h.scrollIntoView({{block: 'center', inline: 'center'}}); const r = h.getBoundingClientRect();
      return {{x: r.left + r.width / 2, y: r.top + r.height / 2, i: h.cellIndex}}; }})()""")


def _values(b: Browser, table: str, i: int) -> list:
    return b.evaluate(f"""Array.from(document.querySelector({table!r}).tBodies[0].rows).map(r =>
      [r.getAttribute('data-rank'), r.cells[{i}].getAttribute('data-v')])""")


@pytest.fixture(scope="module")
def browser():
    with Browser(CHROMIUM) as b:
        yield b


def test_committed_page_renders_sorts_and_fits(browser):
    from gradebench.experiments.leaderboard import leaderboard

    b = browser
    b.open(PAGE.as_uri(), width=1280)
    sections = b.evaluate(SECTIONS)
    boards = leaderboard(REPO / "leaderboard" / "results").boards
    assert [s["name"] for s in sections] == [x.benchmark for x in boards]
    for s, board in zip(sections, boards):
        assert s["height"] > 100 and s["laidOut"], s
        assert s["rows"] == len(board.rows) == s["svgs"], s
    # a real click on a metric header sorts the rows by it (descending first), a second click reverses
    table = "section.bench table.board"
    col = _column(b, table, "kendall")
    before = _values(b, table, col["i"])
    b.click(col["x"], col["y"])
    after = _values(b, table, col["i"])
    assert [r for r, _ in after] != [r for r, _ in before] and sorted(after) == sorted(before)
    keys = [float(v) for _, v in after if v]
    assert keys == sorted(keys, reverse=True)
    col = _column(b, table, "kendall")
    b.click(col["x"], col["y"])
    keys = [float(v) for _, v in _values(b, table, col["i"]) if v]
    assert keys == sorted(keys)
    # the family button groups the systems by scorer
    b.evaluate("document.querySelector('button[data-group=\"2\"]').click()")
    families = [v for _, v in _values(b, table, 2)]
    assert families == sorted(families)
    width, inner, body = b.evaluate(FITS)
    assert width <= inner and body <= inner, (width, inner, body)
    b.open(PAGE.as_uri(), width=390, height=844, mobile=True)
    width, inner, body = b.evaluate(FITS)
    assert inner == 390 and width <= inner and body <= inner, (width, inner, body)
    assert b.errors() == []


def test_the_checks_catch_a_broken_page(browser, tmp_path):
    """The same checks fail on a page that scrolls sideways and throws (so passing above means something)."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><head><meta name="viewport" content="width=device-width"></head><body>'
                   '<div style="width:2000px">wide</div><script>console.error("boom"); nosuch();</script></body>'
                   "</html>", encoding="utf-8")
    b = Browser(CHROMIUM)
    try:
        b.open(bad.as_uri(), width=390, height=844, mobile=True)
        width, inner, _ = b.evaluate(FITS)
        assert width > inner
        errors = b.errors()
        assert any("boom" in e for e in errors) and any("nosuch" in e for e in errors)
    finally:
        b.close()
