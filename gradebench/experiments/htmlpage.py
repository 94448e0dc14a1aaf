"""The pieces of gradebench's static HTML pages: the page shell (inline CSS and the sorting script) and
small inline SVG charts.

A page is one self-contained file: no network (no CDN, fonts, images or scripts from elsewhere), so it
opens from disk. Everything here is a pure function of its arguments with fixed number formatting, so
the same records give byte-identical pages.

Tables with ``class="sortable"`` sort when a header is clicked (or focused and Enter pressed): numeric
columns (``data-type="num"``) by each cell's ``data-v`` (empty = undefined, always last), others by
text; the first click sorts as the header's ``data-first`` says (``desc`` for metrics, higher is
better), the next one reverses. Ties keep the rank order (``data-rank`` of the row). A button with
``data-group`` sorts its table by that column first, then by rank (systems grouped by family).
"""

from __future__ import annotations

import html as _html
from collections.abc import Iterable, Sequence

esc = _html.escape

#: colours of the chart series (an ordered list, so a series' colour depends only on its position)
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")

CSS = """
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1f24;background:#fff;
margin:0 auto;max-width:1240px;padding:0 14px 40px;overflow-wrap:anywhere}
h1{font-size:1.6em;margin:.8em 0 .3em}h2{font-size:1.3em;margin:1.6em 0 .3em;border-bottom:1px solid #d0d7de}
h3{font-size:1.05em;margin:1.1em 0 .3em}small{color:#57606a;font-weight:normal}
a{color:#0969da}nav a{margin-right:.7em;white-space:nowrap}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:13px;margin:.4em 0}
th,td{border-bottom:1px solid #e4e8ec;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f6f8fa;position:sticky;top:0;white-space:nowrap}
table.sortable th{cursor:pointer}table.sortable th:hover{background:#eaeef2}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.best td{background:#eef7ee}tr.probe td:first-child{border-left:3px solid #bf8700}
.mark{font-weight:bold}.mark-best{color:#1a7f37}.mark-tied{color:#1a7f37}.mark-worse{color:#82071e}
.fam{display:inline-block;padding:0 5px;border-radius:8px;background:#eaeef2;font-size:12px;white-space:nowrap}
details summary{cursor:pointer}td details{max-width:30em}
.budget{color:#57606a;font-size:12px;margin:.2em 0}
.verdict{padding:6px 10px;border-radius:6px;border-left:4px solid}
.v-ok{background:#eef7ee;border-color:#1a7f37}.v-warn{background:#fff8e5;border-color:#bf8700}
.v-none{background:#f6f8fa;border-color:#8c959f}.v-bad{background:#ffebe9;border-color:#cf222e}
.card{color:#333}.figs{display:flex;flex-wrap:wrap;gap:18px}.figs figure{margin:0;max-width:100%}
figcaption{font-size:12px;color:#57606a;max-width:460px}
svg{max-width:100%;height:auto}svg text{font:11px system-ui,sans-serif;fill:#1b1f24}
svg .ax{stroke:#8c959f;stroke-width:1}svg .ci{stroke:#0969da;stroke-width:2}svg .pt{fill:#0969da}
svg .ref{stroke:#1a7f37;stroke-dasharray:2 2}
button{font:inherit;font-size:13px;padding:2px 8px;margin:.2em 0}
.badge{padding:0 6px;border-radius:8px;font-size:12px;white-space:nowrap}
.b-reproduced{background:#dafbe1}.b-contradicted{background:#ffebe9}.b-inconclusive{background:#fff8c5}
.b-not-testable{background:#eaeef2}
footer{margin-top:2em;color:#57606a;font-size:13px}
"""

JS = """
(function(){
function key(row,i,num){var c=row.cells[i];if(!c)return null;var v=c.getAttribute('data-v');
if(v===null)v=c.textContent.trim();if(!num)return v.toLowerCase();if(v==='')return null;return parseFloat(v)}
function rank(row){return parseFloat(row.getAttribute('data-rank')||'0')}
function order(table,cols){var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
rows.sort(function(a,b){for(var k=0;k<cols.length;k++){var c=cols[k];var x=key(a,c.i,c.num),y=key(b,c.i,c.num);
if(x===null&&y===null)continue;if(x===null)return 1;if(y===null)return -1;
if(x<y)return c.desc?1:-1;if(x>y)return c.desc?-1:1}return rank(a)-rank(b)});
rows.forEach(function(r){body.appendChild(r)})}
function clear(table){Array.prototype.forEach.call(table.tHead.rows[0].cells,function(h){h.removeAttribute('aria-sort')})}
function sortBy(table,th){var num=th.getAttribute('data-type')==='num';var now=th.getAttribute('aria-sort');
var desc=now?now==='ascending':th.getAttribute('data-first')==='desc';clear(table);
th.setAttribute('aria-sort',desc?'descending':'ascending');order(table,[{i:th.cellIndex,num:num,desc:desc}])}
Array.prototype.forEach.call(document.querySelectorAll('table.sortable'),function(table){
Array.prototype.forEach.call(table.tHead.rows[0].cells,function(th){th.tabIndex=0;
th.addEventListener('click',function(){sortBy(table,th)});
th.addEventListener('keydown',function(e){if(e.key==='Enter'){sortBy(table,th)}})})});
Array.prototype.forEach.call(document.querySelectorAll('button[data-group]'),function(b){
b.addEventListener('click',function(){var table=document.getElementById(b.getAttribute('data-table'));
var i=parseInt(b.getAttribute('data-group'),10);clear(table);order(table,[{i:i,num:false,desc:false}])})});
})();
"""


def page(title: str, body: Iterable[str]) -> str:
    """A whole HTML document: ``title``, the inline CSS, ``body`` (HTML lines) and the inline script."""
    head = ['<!DOCTYPE html>', '<html lang="en">', '<head>', '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f'<title>{esc(title)}</title>', f'<style>{CSS.strip()}</style>', '</head>', '<body>']
    return "\n".join([*head, *body, f'<script>{JS.strip()}</script>', '</body>', '</html>']) + "\n"


def slug(text: str) -> str:
    """An HTML id from ``text``: lower case, runs of other characters as ``-``."""
    out, dash = [], False
    for ch in text.lower():
        if ch.isascii() and ch.isalnum():
            out.append(ch)
            dash = False
        elif not dash:
            out.append("-")
            dash = True
    return "".join(out).strip("-") or "x"


def num(x: float | None, spec: str = ".3f") -> str:
    """``x`` formatted, ``n/a`` for none."""
    return "n/a" if x is None else format(x, spec)


def data_v(x: float | None) -> str:
    """A sort key attribute value: the float to 6 significant digits, empty for none."""
    return "" if x is None else format(round(float(x), 6), ".6g")


def _f(x: float) -> str:
    """A coordinate: one decimal, no trailing zeros."""
    text = f"{x:.1f}"
    return text[:-2] if text.endswith(".0") else text


def scale(lo: float, hi: float, a: float, b: float):
    """The linear map of ``[lo, hi]`` onto ``[a, b]`` (a constant range maps to the middle)."""
    if hi - lo <= 0:
        return lambda v: (a + b) / 2
    return lambda v: a + (v - lo) / (hi - lo) * (b - a)


def interval_svg(value: float | None, low: float | None, high: float | None, lo: float, hi: float, *,
                 ref: float | None = None, width: int = 120, height: int = 14) -> str:
    """A CI drawn as a horizontal line from ``low`` to ``high`` with a dot at ``value`` on the axis
    ``[lo, hi]`` (shared by a table's rows, so intervals compare by eye); ``ref``: a dashed mark (the best)."""
    if value is None:
        return ""
    x = scale(lo, hi, 3, width - 3)
    mid = height / 2
    parts = [f'<svg class="iv" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="{esc(num(value))}">']
    if ref is not None:
        parts.append(f'<line class="ref" x1="{_f(x(ref))}" x2="{_f(x(ref))}" y1="0" y2="{height}"/>')
    if low is not None and high is not None:
        parts.append(f'<line class="ci" x1="{_f(x(low))}" x2="{_f(x(high))}" y1="{_f(mid)}" y2="{_f(mid)}"/>')
    parts.append(f'<circle class="pt" cx="{_f(x(value))}" cy="{_f(mid)}" r="3"/></svg>')
    return "".join(parts)


def tier_svg(groups: Sequence[tuple[str, float, float, int]], *, width: int = 300) -> str:
    """Predicted scores per grade: per ``(label, mean, std, n)`` (highest grade first) a row with the
    band ``mean ± std`` and a dot at the mean, on one axis; ticks at the axis ends."""
    if not groups:
        return ""
    lo = min(m - s for _, m, s, _ in groups)
    hi = max(m + s for _, m, s, _ in groups)
    left, right, row = 92, width - 8, 18
    height = row * len(groups) + 22
    x = scale(lo, hi, left, right)
    out = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="predicted score by grade">']
    for i, (label, m, s, n) in enumerate(groups):
        y = row * i + 11
        out.append(f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{esc(label[:14])}</text>'
                   f'<line class="ci" x1="{_f(x(m - s))}" x2="{_f(x(m + s))}" y1="{y}" y2="{y}"/>'
                   f'<circle class="pt" cx="{_f(x(m))}" cy="{y}" r="3"><title>{esc(label)}: mean {m:.4g}, '
                   f'std {s:.4g}, n {n}</title></circle>')
    base = row * len(groups) + 4
    out.append(f'<line class="ax" x1="{left}" x2="{right}" y1="{base}" y2="{base}"/>'
               f'<text x="{left}" y="{base + 14}">{lo:.3g}</text>'
               f'<text x="{right}" y="{base + 14}" text-anchor="end">{hi:.3g}</text></svg>')
    return "".join(out)


def lines_svg(series: Sequence[tuple[str, Sequence[tuple[float, float, float | None, float | None]]]],
              *, x_label: str, y_label: str, width: int = 420, height: int = 240) -> str:
    """Line chart: per ``(name, [(x, y, y_low, y_high), ...])`` a coloured line with CI whiskers and a
    legend; x ticks at every x of the data."""
    pts = [p for _, ps in series for p in ps]
    if not pts:
        return ""
    xs = sorted({p[0] for p in pts})
    ys = [v for p in pts for v in (p[1], p[2], p[3]) if v is not None]
    lo, hi = min(ys), max(ys)
    pad = (hi - lo) * 0.05 or 0.01
    lo, hi = lo - pad, hi + pad
    left, right, top, bottom = 46, width - 10, 10, height - 46
    full = height + 12 * ((len(series) - 1) // 3)  # the legend's extra rows, three names a row
    x = scale(xs[0], xs[-1], left, right)
    y = scale(lo, hi, bottom, top)
    out = [f'<svg width="{width}" height="{full}" viewBox="0 0 {width} {full}" role="img" '
           f'aria-label="{esc(y_label)} by {esc(x_label)}">',
           f'<line class="ax" x1="{left}" x2="{right}" y1="{bottom}" y2="{bottom}"/>'
           f'<line class="ax" x1="{left}" x2="{left}" y1="{top}" y2="{bottom}"/>']
    for v in xs:
        out.append(f'<text x="{_f(x(v))}" y="{bottom + 14}" text-anchor="middle">{v:g}</text>')
    for v in (lo + pad, hi - pad):
        out.append(f'<text x="{left - 4}" y="{_f(y(v) + 4)}" text-anchor="end">{v:.3f}</text>')
    out.append(f'<text x="{_f((left + right) / 2)}" y="{bottom + 28}" text-anchor="middle">{esc(x_label)}</text>')
    for i, (name, ps) in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        ps = sorted(ps)
        path = " ".join(f"{_f(x(p[0]))},{_f(y(p[1]))}" for p in ps)
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{path}"/>')
        for px, py, pl, ph in ps:
            if pl is not None and ph is not None:
                out.append(f'<line stroke="{colour}" x1="{_f(x(px))}" x2="{_f(x(px))}" y1="{_f(y(pl))}" '
                           f'y2="{_f(y(ph))}"/>')
            out.append(f'<circle fill="{colour}" cx="{_f(x(px))}" cy="{_f(y(py))}" r="2.5"><title>{esc(name)}, '
                       f'{esc(x_label)} {px:g}: {py:.3f}</title></circle>')
        lx = left + (i % 3) * ((right - left) // 3)
        ly = bottom + 40 + 12 * (i // 3)
        out.append(f'<rect x="{lx}" y="{ly - 8}" width="10" height="3" fill="{colour}"/>'
                   f'<text x="{lx + 14}" y="{ly - 4}">{esc(name[:24])}</text>')
    out.append("</svg>")
    return "".join(out)


def heat_colour(t: float) -> str:
    """White (0) to blue (1)."""
    t = min(1.0, max(0.0, t))
    r, g, b = (int(round(255 + (c - 255) * t)) for c in (33, 102, 172))
    return f"#{r:02x}{g:02x}{b:02x}"


def heatmap_html(rows: Sequence[str], cols: Sequence[str], values: dict[tuple[str, str], float | None],
                 *, corner: str) -> str:
    """A heatmap as a table: a cell's background from white (lowest value) to blue (highest), its value
    as text; empty where there is no value."""
    defined = [v for v in values.values() if v is not None]
    if not defined:
        return ""
    lo, hi = min(defined), max(defined)
    t = scale(lo, hi, 0.0, 1.0)
    out = ['<div class="scroll"><table class="heat">',
           "<thead><tr>" + f"<th>{esc(corner)}</th>" + "".join(f"<th>{esc(c)}</th>" for c in cols) + "</tr></thead>",
           "<tbody>"]
    for r in rows:
        tds = []
        for c in cols:
            v = values.get((r, c))
            if v is None:
                tds.append('<td class="num"></td>')
                continue
            shade = t(v)
            ink = "#fff" if shade > 0.6 else "#1b1f24"
            tds.append(f'<td class="num" style="background:{heat_colour(shade)};color:{ink}">{v:.3f}</td>')
        out.append(f"<tr><th>{esc(r)}</th>{''.join(tds)}</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)
