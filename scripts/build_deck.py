"""Write notebooks/07_attention.ipynb from the cell list below (outputs are added by executing it).

The notebook is the deck; this script is how its cells were authored, kept so that a change to
the slide structure is one reviewed diff.  After running it, execute the notebook:
``jupyter nbconvert --to notebook --execute --inplace notebooks/07_attention.ipynb``.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
DECK = ROOT / "notebooks" / "07_attention.ipynb"

# (slide_type, cell_type, source); slide_type "-" continues the current slide.
CELLS: list[tuple[str, str, str]] = []


def md(slide: str, text: str) -> None:
    CELLS.append((slide, "markdown", text.strip("\n")))


def code(slide: str, text: str) -> None:
    CELLS.append((slide, "code", text.strip("\n")))


def notes(text: str) -> None:
    CELLS.append(("notes", "markdown", text.strip("\n")))


# --------------------------------------------------------------------------- 1. title
md(
    "slide",
    """
# Attention

### Lecture 7: letting a network look back at what it read

<small>Every picture in this deck is drawn by our code, every model was trained by our own
scripts in seconds on a laptop CPU, and every cell can be edited and run during the talk.</small>
""",
)
md(
    "fragment",
    """
**By the end of this lecture you can**
* explain what *attention* is and why neural networks need it,
* use attention inside an RNN sequence-to-sequence model (Bahdanau et al.),
* build a sequence-to-sequence model from attention alone, with no RNN (the Transformer).
""",
)
notes(
    """
Welcome. Three goals on the slide; the whole lecture is a story of one idea: instead of
squeezing the input into one vector, let the decoder *look back* at every input position and
decide where to look. Everything shown is live: press Shift+Enter on any code cell.
"""
)
code(
    "skip",
    """
# The lecture's code lives in the attnlab package; this cell only imports it and fixes seeds.
import torch

import attnlab
from attnlab import attention as A
from attnlab import lecture, plots, widgets

torch.manual_seed(0)
torch.set_num_threads(2)
""",
)

# --------------------------------------------------------------------------- 2. seq2seq
md(
    "slide",
    """
## Sequence to sequence ([Sutskever et al., 2014](https://papers.nips.cc/paper/5346-sequence-to-sequence-learning-with-neural-networks.pdf))

* An **encoder** RNN reads the source sequence $S$ and compresses it into **one vector of fixed size**.
* A **decoder** RNN unrolls the target sequence $T$ (say, a translation) from that vector alone.
* The two lengths need not match: $length(S) \\neq length(T)$ in general.

<img src="../pics/seq2seq_lite.png" width="90%">

What could go wrong?
""",
)
md(
    "fragment",
    """
**The bottleneck:** the meaning of the *whole* input must fit into that one vector, however
long the input is. Short inputs fit; long ones do not.
""",
)
notes(
    """
Ask the room before revealing the fragment. The vector has the same size for a 3-word and a
50-word sentence: something has to give. Next: we see it happen with our own models.
"""
)
md(
    "subslide",
    """
### The bottleneck, live

`rnnenc-dates` is exactly this design (a GRU encoder; its final state is all the decoder
sees), trained by us to rewrite dates in ISO form:
""",
)
code(
    "-",
    """
rnnenc = attnlab.load("rnnenc-dates")
rnnenc.translate("3 May 1979"), rnnenc.translate("Wednesday, 17 September 2064")
""",
)
md(
    "fragment",
    """
Dates are short. Now reverse digit strings: the same design without attention against
RNNSearch (with attention, next slides), both trained with the same budget on lengths 5 to 60:
""",
)
code(
    "-",
    """
lecture.reverse_demo(["rnnenc-reverse", "rnnsearch-reverse"], lengths=[6, 12, 25, 40])
""",
)
notes(
    """
The fixed-vector model copes with short strings and collapses on long ones: it has to
remember every digit in one state vector. The attention model reads them back when needed.
"""
)

# --------------------------------------------------------------------------- 3. Bahdanau
md(
    "slide",
    """
## Attention in RNN seq2seq ([Bahdanau et al., 2014](https://arxiv.org/pdf/1409.0473.pdf))

* Keep **every** encoder hidden state, not only the last one.
* At each output step the decoder decides how much **attention** to pay to each source token:
  a weighted average of the encoder states, recomputed for every output token.

<img src="../pics/seq2seq_attention.png" width="78%">
""",
)
notes(
    """
The fix is simple to state: don't throw away the encoder states. The decoder gets a fresh
summary of the input at every step, weighted by relevance. The picture: arrows thickness =
attention weight.
"""
)
md(
    "slide",
    """
### The equations

Input $x=[x_1, \\dots, x_n]$, output $y=[y_1, \\dots, y_m]$.

$$
\\begin{aligned}
h_i &= [\\overrightarrow{h_i};\\overleftarrow{h_i}] && \\text{encoder state (bidirectional)}\\\\[4pt]
s_t &= f(s_{t-1}, y_{t-1}, c_t) && \\text{decoder state}\\\\[4pt]
c_t &= \\sum_{i=1}^{n}\\alpha_{t,i}\\,h_i && \\text{context vector}\\\\[4pt]
\\alpha_{t,i} &= \\frac{\\exp(score(s_{t-1},h_i))}{\\sum_{i'=1}^{n}\\exp(score(s_{t-1},h_{i'}))} && \\text{attention weights}\\\\[4pt]
score(s_t,h_i) &= s_t^\\top W_a h_i && \\text{Luong's "general" score}
\\end{aligned}
$$

The score is from [Luong et al., 2015](https://arxiv.org/pdf/1508.04025.pdf); Bahdanau et al.
used a small network instead (next slides compare them).
""",
)
notes(
    """
Walk through top to bottom. alpha is a softmax over source positions, so the weights are
positive and sum to one: c_t is a weighted average of the h_i. The score is any function that
says how well s_{t-1} matches h_i; Luong's "general" score is a bilinear form.
"""
)
md(
    "subslide",
    """
### The same equations in code

`attnlab.attention.attention` computes $\\alpha$ and $c_t$ for any score:
""",
)
code(
    "-",
    """
n, d = 5, 4
h = torch.randn(n, d)  # h_1..h_n: encoder states, (n, d)
s_prev = torch.randn(1, d)  # s_{t-1}: one decoder state, (1, d)
score = A.GeneralScore(d, d)  # s^T W_a h
c_t, alpha = A.attention(s_prev, h, h, score)  # c_t = sum_i alpha_{t,i} h_i
alpha.detach().round(decimals=3), round(alpha.sum().item(), 6)  # rows sum to 1
""",
)
md(
    "subslide",
    """
### Four scores, one attention

Dot $s^\\top h$, scaled dot $s^\\top h/\\sqrt{d}$, general $s^\\top W_a h$ and additive
$v^\\top\\tanh(W s + U h)$ (Bahdanau's) all plug into the same softmax. Change the query and
compare the $\\alpha$ they give:
""",
)
code(
    "-",
    """
widgets.ScoreLab()
""",
)
notes(
    """
All four are interchangeable: same inputs, a score per (query, key) pair, same softmax. The
additive one is a small neural network; dot products are cheaper and what the Transformer uses.
"""
)

# --------------------------------------------------------------------------- 4. length
md(
    "slide",
    """
### Accuracy against sentence length

<img src="../pics/seq2seq_attention_length.png" width="66%">

Our reversal models, trained with the same budget: without attention (RNNEncDec) accuracy
collapses as inputs grow; with attention (RNNSearch) it holds. Bahdanau et al. (Fig. 2) saw
the same on English-French: RNNencdec's BLEU falls steeply beyond about 20 words, RNNsearch-50
stays high even past 50.
""",
)
code(
    "-",
    """
from attnlab.experiments.length import load_results

results = load_results()  # measured by `python -m attnlab.experiments.length`
{name: [round(x, 2) for x in m["exact_match"]] for name, m in results["models"].items()}
""",
)
notes(
    """
The figure is drawn from the results file of our length experiment, not copied from the
paper. The shape matches the paper's: the fixed-length vector fails on long inputs.
"""
)

# --------------------------------------------------------------------------- 5. stepper
md(
    "slide",
    """
### Watch the decoder attend

Type a date (ask the audience for one), then step through the decoding: row $t$ of the
heatmap is $\\alpha_{t,1..n}$, the weights the decoder gives the source characters while
writing output character $t$.
""",
)
code(
    "-",
    """
widgets.DecodeStepper()  # the shipped rnnsearch-dates; Transformer in the model chooser
""",
)
notes(
    """
Try "3 May 1979", "tuesday december 31 2099", "01/02/1903". Point out: the year digits
attend to the year, the month digits to the month name, the attention of the bi-GRU often
sits one character off (its neighbours' states already carry the symbol).
"""
)
md(
    "subslide",
    """
### Train it yourself, live

RNNSearch on dates to 99% exact match on 2 CPU cores, in seconds (skip this cell and the
shipped checkpoint is used instead):
""",
)
code(
    "-",
    """
# NBVAL_IGNORE_OUTPUT: the progress plot and the training time differ from run to run.
from attnlab.train import fit

live_model, history = fit("rnnsearch", task="dates", target_accuracy=0.99)
""",
)
code(
    "-",
    """
live_model.translate("3 May 1979")
""",
)
notes(
    """
Run it while talking: the loss falls within a few seconds and the accuracy jumps to 99% after
about 100 steps of 128 dates. If the room's laptop is slow, skip it: the shipped checkpoint is
the same recipe.
"""
)

# --------------------------------------------------------------------------- 6. Transformer
md(
    "slide",
    """
## The Transformer ([Vaswani et al., 2017](http://papers.nips.cc/paper/7181-attention-is-all-you-need.pdf))

* A seq2seq model with **no RNN and no CNN**.
* Attention alone relates every position of the input and the output to every other.
* Payoff: training is **parallel** over positions; no backpropagation through time.
""",
)
md(
    "fragment",
    """
An RNN needs $n$ steps one after the other; one self-attention layer needs $O(1)$
sequential steps for any $n$. Measured here, forward pass of one layer:
""",
)
code(
    "-",
    """
# NBVAL_IGNORE_OUTPUT: wall-clock timings differ from run to run.
lecture.plot_timings(lecture.time_rnn_vs_attention(lengths=[16, 32, 64, 128, 256, 512], d=256))
""",
)
notes(
    """
The RNN's time grows linearly because step t waits for step t-1; attention's cost is a few
matrix products that use all cores at once. Its work grows with n^2 d, so once n is well past
d (here 256) it catches up: Table 1 again. On a GPU, with thousands of cores, the gap is far
larger: that is what made the Transformer fast to train.
"""
)

# --------------------------------------------------------------------------- 7. path length
md(
    "slide",
    """
### Self-attention and path length

**Self-attention** relates the positions of *one* sequence to each other: queries, keys and
values all come from the same sequence.

**Path length** between two positions: how many layers a signal crosses to get from one to the
other. RNN: $O(n)$; convolutions: $O(n/k)$ contiguous, $O(\\log_k(n))$ dilated; self-attention:
$O(1)$, a constant path between any pair of positions.

<img src="../pics/wavenet.png" width="95%">
""",
)
notes(
    """
Short paths make long-range dependencies easier to learn: gradients and information pass
through fewer nonlinear steps. The picture is a WaveNet-style stack of dilated causal
convolutions: the last output sees every input after log_k(n) layers.
"""
)
md(
    "subslide",
    """
### Path lengths, explored
""",
)
code(
    "-",
    """
widgets.PathLengthExplorer()
""",
)
md(
    "subslide",
    """
### Table 1 of Vaswani et al.

| layer type | complexity per layer | sequential operations | maximum path length |
|---|---|---|---|
| self-attention | $O(n^2 \\cdot d)$ | $O(1)$ | $O(1)$ |
| recurrent | $O(n \\cdot d^2)$ | $O(n)$ | $O(n)$ |
| convolutional | $O(k \\cdot n \\cdot d^2)$ | $O(1)$ | $O(\\log_k(n))$ |
| self-attention (restricted to $r$ neighbours) | $O(r \\cdot n \\cdot d)$ | $O(1)$ | $O(n/r)$ |

$n$: sequence length, $d$: representation size, $k$: kernel size, $r$: neighbourhood size.
""",
)
notes(
    """
Self-attention is cheaper than recurrence whenever n < d, which is usual for sentences
(n ~ 50, d ~ 512); for very long inputs one restricts attention to a window of r positions.
"""
)

# --------------------------------------------------------------------------- 8. overview
md(
    "slide",
    """
### The Transformer at a glance

<img src="../pics/transformer_overview.png" width="96%">
""",
)
notes(
    """
Masked attention: in the decoder, each position may attend only to earlier positions, so the
model cannot look at words it has not predicted yet. At training time all target positions are
processed at once, and the mask is what keeps this honest.
"""
)
md(
    "subslide",
    """
### Masked (causal) attention

Position $t$ may attend to positions $1..t$ only: `causal_mask(n)` is True on and below the
diagonal, and the masked weights are exactly zero.
""",
)
code(
    "-",
    """
fig, weights = lecture.causal_demo(n=6)
fig
""",
)
notes(
    """
Row t of the right panel sums to 1 over positions 1..t only; everything to the right of the
diagonal is exactly 0, so no information flows from the future.
"""
)

# --------------------------------------------------------------------------- 9. QKV
md(
    "slide",
    """
### Attention in the Transformer

<img src="../pics/transformer_attention.png" width="60%">

* Query $Q$: the word asking (the current position)
* Keys $K$: the words it may look at
* Values $V$: what each of those words hands over

$$Attention(Q, K, V) = softmax\\left(\\frac{QK^\\top}{\\sqrt{d_k}}\\right)V$$

Find the keys most similar to the query; return the mix of their values.
""",
)
notes(
    """
Same recipe as Bahdanau with dot-product scores, computed for all queries at once as one
matrix product. Multi-head: h such attentions in parallel on smaller projections, concatenated.
"""
)
md(
    "subslide",
    """
### Why divide by $\\sqrt{d_k}$?

For random $q, k$ with unit-variance entries, $q^\\top k$ has variance $d_k$: the scores grow
with $d_k$ and the softmax saturates (one weight near 1, tiny gradients). Slide $d_k$ with
and without the scaling:
""",
)
code(
    "-",
    """
widgets.ScaledDotExplorer()
""",
)
notes(
    """
Untick the scaling and push d_k to 512: the largest weight per row goes to 1 and the entropy
to 0: the softmax is saturated and its gradient vanishes. Tick it again: the rows stay soft.
The causal-mask toggle zeroes the upper triangle.
"""
)
md(
    "subslide",
    """
### The trained Transformer's heads on a date

Cross-attention of every layer and head of `transformer-dates` (2 layers x 4 heads):
""",
)
code(
    "-",
    """
transformer = attnlab.load("transformer-dates")
lecture.head_grid(transformer, "Saturday, 30 June 2001")
""",
)
notes(
    """
Heads specialise: some track the year, some the month, some the day. Type another date to
see it. In the ScaledDotExplorer the "trained Transformer" mode shows the real Q and K.
"""
)

# --------------------------------------------------------------------------- 10. results
md(
    "slide",
    """
### Results with the Transformer

<img src="../pics/transformer_results.png" width="72%">

Better BLEU than every earlier model on WMT 2014 English-German (base 27.3, big 28.4) and
English-French (38.1, 41.8) at a fraction of the training cost ($3.3 \\cdot 10^{18}$ and
$2.3 \\cdot 10^{19}$ FLOPs).
""",
)
notes(
    """
Table 2 of the paper, redrawn. The base model already beats the ensembles on EN-DE at about a
hundredth of their training cost.
"""
)
md(
    "subslide",
    """
### Our own results table: dates to ISO
""",
)
code(
    "-",
    """
lecture.model_table()
""",
)
notes(
    """
Same task, same data, the three designs of this lecture. Attention wins on accuracy at equal
budget; the Transformer has more parameters and trains longer on a CPU, but in parallel.
"""
)

# --------------------------------------------------------------------------- 11. references
md(
    "slide",
    """
## References

* I. Sutskever, O. Vinyals, Q. V. Le. [Sequence to sequence learning with neural networks](https://papers.nips.cc/paper/5346-sequence-to-sequence-learning-with-neural-networks.pdf). NIPS 2014.
* D. Bahdanau, K. Cho, Y. Bengio. [Neural machine translation by jointly learning to align and translate](https://arxiv.org/pdf/1409.0473.pdf). 2014.
* A. Vaswani et al. [Attention is all you need](http://papers.nips.cc/paper/7181-attention-is-all-you-need.pdf). NIPS 2017.
* M.-T. Luong, H. Pham, C. D. Manning. [Effective approaches to attention-based neural machine translation](https://arxiv.org/pdf/1508.04025.pdf). EMNLP 2015.
* D. Rao & B. McMahan, *Natural Language Processing with PyTorch*, chapter 8.
* [Attention? Attention!](https://lilianweng.github.io/lil-log/2018/06/24/attention-attention.html), a blog post by Lilian Weng.
* [The Annotated Transformer](http://nlp.seas.harvard.edu/2018/04/03/attention.html).
* [Video: the Transformer presented by one of its authors](https://www.youtube.com/watch?v=rBCqOTEfxvg).

Exercises: `notebooks/07_attention_exercises.ipynb`.
""",
)
notes(
    """
The first four are the papers behind the slides; the rest are where to read next. The
exercises notebook has students write each score, the masked softmax, one decoding step and
scaled dot-product attention, with checks that say exactly what is wrong.
"""
)


def build() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    for i, (slide, kind, src) in enumerate(CELLS):
        cell = nbformat.v4.new_markdown_cell(src) if kind == "markdown" else None
        if cell is None:
            cell = nbformat.v4.new_code_cell(src)
        cell.metadata["slideshow"] = {"slide_type": slide}
        if kind == "code" and src.startswith("# NBVAL_IGNORE_OUTPUT"):
            cell.metadata["tags"] = ["nbval-ignore-output"]
        cell.id = f"cell-{i:02d}"  # stable ids: rebuilding gives a readable diff
        nb.cells.append(cell)
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "name": "python3",
    }
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["rise"] = {
        "autolaunch": False,
        "start_slideshow_at": "beginning",
        "scroll": True,
        "theme": "white",
        "transition": "none",
        "width": 1280,
        "height": 720,
        "center": False,
        "controls": True,
        "progress": True,
        "slideNumber": True,
    }
    return nb


if __name__ == "__main__":
    nb = build()
    nbformat.validator.normalize(nb)
    DECK.parent.mkdir(exist_ok=True)
    nbformat.write(nb, DECK)
    print(f"wrote {DECK} ({len(nb.cells)} cells)")
