"""Export the deck as reveal.js slides that work with no network: `make html` writes html/.

    python scripts/export_html.py [--notebook notebooks/07_attention.ipynb] [--out html]

1. `npm ci` (package.json and package-lock.json at the repo root, run only when node_modules is
   missing or older than the lock file) fetches pinned copies of reveal.js, MathJax 2, require.js,
   jQuery and the widget renderer (@jupyter-widgets/html-manager) from the npm registry.
2. The files the page loads are copied into html/lib/, so html/ is self-contained.
3. The deck is executed (nbclient, widget state stored in the notebook), so that each widget's
   last picture and the DecodeStepper's pre-rendered frames are in the file.
4. nbconvert's SlidesExporter writes html/<deck>.slides.html with every URL pointing into lib/
   (never a CDN) and the pictures (../pics/*.png) embedded.  Open it straight from disk.
"""

from __future__ import annotations

import argparse
import base64
import mimetypes
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import jinja2
import nbformat
from nbclient import NotebookClient
from nbconvert.exporters import SlidesExporter
from traitlets.config import Config

ROOT = Path(__file__).resolve().parents[1]
DECK = ROOT / "notebooks" / "07_attention.ipynb"
NODE_MODULES = ROOT / "node_modules"

# What the exported page loads, relative to the html file (copied from node_modules into lib/).
REVEAL_PREFIX = "lib/reveal.js"
MATHJAX_URL = "lib/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe"
REQUIRE_URL = "lib/require.js"
JQUERY_URL = "lib/jquery.min.js"
# embed.js (not embed-amd.js): it finds its fonts next to itself, also under file://.
WIDGETS_URL = "lib/html-manager/embed.js"

# (source under node_modules, destination under lib/); directories are copied whole.
ASSETS = [
    ("reveal.js/dist/reveal.js", "reveal.js/dist/reveal.js"),
    ("reveal.js/dist/reveal.css", "reveal.js/dist/reveal.css"),
    ("reveal.js/dist/reset.css", "reveal.js/dist/reset.css"),
    ("reveal.js/dist/theme", "reveal.js/dist/theme"),
    ("reveal.js/plugin/notes", "reveal.js/plugin/notes"),
    ("mathjax/MathJax.js", "mathjax/MathJax.js"),
    ("mathjax/config/TeX-AMS_CHTML-full.js", "mathjax/config/TeX-AMS_CHTML-full.js"),
    ("mathjax/config/Safe.js", "mathjax/config/Safe.js"),
    ("mathjax/extensions", "mathjax/extensions"),
    ("mathjax/jax/input/TeX", "mathjax/jax/input/TeX"),
    ("mathjax/jax/output/CommonHTML", "mathjax/jax/output/CommonHTML"),
    ("mathjax/jax/element", "mathjax/jax/element"),
    ("mathjax/fonts/HTML-CSS/TeX/woff", "mathjax/fonts/HTML-CSS/TeX/woff"),
    ("mathjax/fonts/HTML-CSS/TeX/otf", "mathjax/fonts/HTML-CSS/TeX/otf"),
    ("mathjax/localization/en", "mathjax/localization/en"),
    ("requirejs/require.js", "require.js"),
    ("jquery/dist/jquery.min.js", "jquery.min.js"),
    ("@jupyter-widgets/html-manager/dist", "html-manager"),
]
SKIP = shutil.ignore_patterns("*.map", "*.esm.js", "embed-amd.js", "libembed-amd.js", "*.txt")

# The stock reveal template, with these changes: it no longer imports mermaid.js from a CDN
# (the deck has no mermaid diagrams); MathJax does not break formulas across lines (its
# automatic line breaks split a fraction from its left-hand side); a code cell whose input
# JupyterLab hides (jupyter.source_hidden) shows its outputs only, as in the slideshow; a raw
# cell of text/markdown (the speaker notes) is rendered as markdown, its "<eos>" and "<s>" kept
# as text; and the slideshow's rise.css (the notebook's folder) is inlined, so the export shows the type sizes of
# the slideshow.
TEMPLATE = "attnlab_offline_slides.html.j2"
TEMPLATE_SOURCE = r"""{%- extends 'index.html.j2' -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_js_mathjax -%}
<script src="{{ resources.mathjax_url }}"></script>
<script type="text/x-mathjax-config">
if (window.MathJax) {
  MathJax.Hub.Config({
    TeX: {equationNumbers: {autoNumber: "AMS", useLabelIds: true}},
    tex2jax: {
      inlineMath: [["$", "$"], ["\\(", "\\)"]],
      displayMath: [["$$", "$$"], ["\\[", "\\]"]],
      processEscapes: true,
      processEnvironments: true
    },
    displayAlign: "center",
    messageStyle: "none",
    CommonHTML: {linebreaks: {automatic: false}}
  });
  MathJax.Hub.Queue(["Typeset", MathJax.Hub]);
}
</script>
{%- endblock html_head_js_mathjax -%}
{%- block input_group -%}
{%- if not cell.metadata.get('jupyter', {}).get('source_hidden', False) -%}
{{ super() }}
{%- endif -%}
{%- endblock input_group -%}
{%- block rawcell scoped -%}
{%- if cell.metadata.get('raw_mimetype', '') == 'text/markdown' -%}
<div class="jp-Cell jp-MarkdownCell jp-Notebook-cell">
<div class="jp-RenderedHTMLCommon jp-RenderedMarkdown jp-MarkdownOutput">
{{ cell.source | replace("&", "&amp;") | replace("<", "&lt;") | markdown2html }}
</div>
</div>
{%- else -%}
{{ super() }}
{%- endif -%}
{%- endblock rawcell -%}
{%- block html_head_css -%}
{%- if resources.attnlab_css -%}
<style type="text/css">
{{ resources.attnlab_css | safe }}
</style>
{%- endif -%}
{%- endblock html_head_css -%}
{%- block footer_js -%}
{{ super() }}
<script>
// As in the RISE slideshow: the slide at its own size (no margin, so no scaling down), and
// the deck's own vertical centring.
require(["{{ resources.reveal.url_prefix }}/dist/reveal.js"], function (Reveal) {
  var same = function () { Reveal.configure({margin: 0, center: {{ resources.attnlab_center }}}); };
  if (Reveal.isReady()) { same(); } else { Reveal.on("ready", same); }
});
</script>
{%- endblock footer_js -%}
"""


def ensure_node_modules() -> None:
    """`npm ci` when node_modules is missing or older than package-lock.json."""
    marker = NODE_MODULES / ".package-lock.json"  # written by npm after every install
    lock = ROOT / "package-lock.json"
    if marker.exists() and marker.stat().st_mtime >= lock.stat().st_mtime:
        return
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("make html needs Node.js and npm (apt-get install nodejs npm)")
    print("npm ci: local copies of reveal.js, MathJax, require.js, the widget renderer", flush=True)
    subprocess.run(
        [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
        cwd=ROOT,
        check=True,
    )


def copy_assets(lib: Path) -> None:
    """Copy what the page loads from node_modules into lib/."""
    for src_rel, dst_rel in ASSETS:
        src, dst = NODE_MODULES / src_rel, lib / dst_rel
        if not src.exists():
            raise SystemExit(f"{src} is missing: delete node_modules and run make html again")
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=SKIP, dirs_exist_ok=True)
        else:
            shutil.copy2(src, dst)


# Pictures in markdown: <img src="../pics/x.png"> and ![alt](../pics/x.png).
PICTURE_REFS = [
    re.compile(r'(<img\b[^>]*?\bsrc=")([^"]+)(")'),
    re.compile(r"(!\[[^\]]*\]\()([^)\s]+)()"),
]


def embed_pictures(nb: nbformat.NotebookNode, folder: Path) -> int:
    """Replace the deck's local pictures by data: URLs; returns how many were embedded.

    nbconvert's own embed_images refuses files outside the notebook's folder, and the deck
    loads ../pics/*.png; here files under the folder's parent (the repository) are allowed.
    """
    allowed = folder.parent.resolve()
    count = 0

    def data_url(match: re.Match) -> str:
        nonlocal count
        path = (folder / match.group(2)).resolve()
        if not (path.is_file() and path.is_relative_to(allowed)):
            return match.group(0)
        mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        count += 1
        encoded = base64.b64encode(path.read_bytes()).decode("ascii")
        return f"{match.group(1)}data:{mime};base64,{encoded}{match.group(3)}"

    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for pattern in PICTURE_REFS:
                cell.source = pattern.sub(data_url, cell.source)
    return count


def execute(nb: nbformat.NotebookNode, cwd: Path, timeout: int) -> None:
    """Run every cell in a fresh kernel; widget state is stored in nb.metadata.widgets."""
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    # `make` exports MPLBACKEND=Agg for scripts; the kernel must keep ipykernel's inline
    # backend, or figures would be stored as "<Figure size ...>" text.
    os.environ.pop("MPLBACKEND", None)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd)}},
        store_widget_state=True,
    )
    client.execute()


def slides_config(nb: nbformat.NotebookNode) -> Config:
    """SlidesExporter settings: local URLs, and the RISE look (theme, size) of the deck."""
    rise = nb.metadata.get("rise", {})
    c = Config()
    c.SlidesExporter.reveal_url_prefix = REVEAL_PREFIX
    c.SlidesExporter.reveal_theme = rise.get("theme", "white")
    c.SlidesExporter.reveal_transition = rise.get("transition", "none")
    c.SlidesExporter.reveal_scroll = bool(rise.get("scroll", True))
    c.SlidesExporter.reveal_width = str(rise.get("width", 1280))
    c.SlidesExporter.reveal_height = str(rise.get("height", 720))
    c.SlidesExporter.mathjax_url = MATHJAX_URL
    c.SlidesExporter.require_js_url = REQUIRE_URL
    c.SlidesExporter.jquery_url = JQUERY_URL
    c.SlidesExporter.widget_renderer_url = WIDGETS_URL
    c.SlidesExporter.embed_images = True  # pictures next to the notebook become data: URLs
    c.SlidesExporter.anchor_link_text = ""  # no "¶" beside the slide titles
    return c


def export(notebook: Path, out: Path, run: bool = True, timeout: int = 600) -> Path:
    """Write out/<name>.slides.html and out/lib/; returns the path of the html file."""
    ensure_node_modules()
    out.mkdir(parents=True, exist_ok=True)
    copy_assets(out / "lib")
    nb = nbformat.read(notebook, as_version=4)
    if run:
        start = time.perf_counter()
        execute(nb, notebook.parent, timeout)
        print(f"executed {notebook.name} in {time.perf_counter() - start:.1f} s", flush=True)
    embed_pictures(nb, notebook.parent)
    exporter = SlidesExporter(
        config=slides_config(nb),
        extra_loaders=[jinja2.DictLoader({TEMPLATE: TEMPLATE_SOURCE})],
    )
    exporter.template_file = TEMPLATE
    resources = {"metadata": {"name": notebook.stem, "path": str(notebook.parent)}}
    css = notebook.parent / "rise.css"  # what RISE loads beside the notebook
    resources["attnlab_css"] = css.read_text(encoding="utf-8") if css.is_file() else ""
    center = nb.metadata.get("rise", {}).get("center", True)
    resources["attnlab_center"] = "true" if center else "false"
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    target = out / f"{notebook.stem}.slides.html"
    target.write_text(body, encoding="utf-8")
    return target


def size_line(target: Path) -> str:
    """The export's size: the html file (pictures and widget frames inside) and with lib/."""
    mib = 1024 * 1024
    folder = sum(f.stat().st_size for f in target.parent.rglob("*") if f.is_file())
    return (
        f"size: {target.stat().st_size / mib:.1f} MiB {target.name}, "
        f"{folder / mib:.1f} MiB with lib/ (the whole folder {target.parent.name}/)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebook", type=Path, default=DECK)
    parser.add_argument("--out", type=Path, default=ROOT / "html")
    parser.add_argument("--no-execute", action="store_true", help="use the stored outputs")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args(argv)
    target = export(args.notebook.resolve(), args.out.resolve(), not args.no_execute, args.timeout)
    print(f"slides: {target}\nopen it in a browser (file://{target}); it needs no network")
    print(size_line(target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
