# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     notebook_metadata_filter: rise
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   rise:
#     autolaunch: false
#     center: false
#     controls: true
#     height: 720
#     progress: true
#     scroll: true
#     slideNumber: true
#     start_slideshow_at: beginning
#     theme: white
#     transition: none
#     width: 1280
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # Attention
#
# ### Lecture 7: letting a network look back at what it read
#
# <small>Every picture in this deck is drawn by our code; every model was trained by our own
# scripts on a laptop-class CPU with one thread: the date models in 10 s to 2 minutes, the
# digit-reversal models in 1 to 19 minutes, the translation models in at most 10 minutes each
# (the times are on each model's card). Every cell can be edited and run during the talk.</small>

# %% [markdown] slideshow={"slide_type": "fragment"}
# **By the end of this lecture you can**
# * explain what *attention* is and why neural networks need it,
# * use attention inside an RNN sequence-to-sequence model (Bahdanau et al.),
# * build a sequence-to-sequence model from attention alone, with no RNN (the Transformer).

# %% [markdown] slideshow={"slide_type": "notes"}
# Welcome. Three goals on the slide; the whole lecture is a story of one idea: instead of
# squeezing the input into one vector, let the decoder *look back* at every input position and
# decide where to look. Everything shown is live: press Shift+Enter on any code cell. The code
# cells beside the equations show the library's own source: what you see is what runs.
# Minutes: 1

# %% slideshow={"slide_type": "skip"}
# The lecture's code lives in the attnlab package; this cell only imports it and fixes seeds.
import torch

import attnlab
from attnlab import attention as A
from attnlab import lecture, widgets
from attnlab.experiments.language import load_results

torch.manual_seed(0)
torch.set_num_threads(1)  # small, latency-bound work: one thread is fastest on a shared machine

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Sequence to sequence ([Sutskever et al., 2014](https://papers.nips.cc/paper/5346-sequence-to-sequence-learning-with-neural-networks.pdf))
#
# * An **encoder** RNN reads the source $x_1, \dots, x_n$ into **one vector of fixed size**.
# * A **decoder** RNN writes the target $y_1, \dots, y_m$ (say, a translation) from that vector
#   alone; $n \neq m$ in general.
#
# <img src="../pics/seq2seq_lite.png" width="90%">

# %% [markdown] slideshow={"slide_type": "fragment"}
# **The bottleneck:** the meaning of the *whole* input must fit into that one vector, however
# long the input is.

# %% [markdown] slideshow={"slide_type": "notes"}
# Ask the room what could go wrong before revealing the fragment. The vector has the same size
# for a 3-word and a 50-word sentence: something has to give. Next: we see it happen with our
# own models.
# Minutes: 2

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The bottleneck, live
#
# `rnnenc-dates` is exactly this design, trained by us to rewrite dates in ISO form:

# %%
rnnenc = attnlab.load("rnnenc-dates")
rnnenc.translate("3 May 1979"), rnnenc.translate("Wednesday, 17 September 2064")

# %% [markdown] slideshow={"slide_type": "fragment"}
# Dates are short. Now reverse digit strings: the same design without attention against
# RNNSearch (with attention, next slides), both trained 1000 steps on lengths 5 to 60:

# %%
lecture.reverse_demo(["rnnenc-reverse", "rnnsearch-reverse"], lengths=[6, 12, 25, 40])

# %% [markdown] slideshow={"slide_type": "notes"}
# rnnenc-dates: a GRU encoder whose final state is all the decoder sees. The fixed-vector model
# copes with short strings and collapses on long ones: it has to
# remember every digit in one state vector. The attention model reads them back when needed.
# Is the comparison fair? We come back to it with the length curves (equal compute, measured).
# Minutes: 2

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Attention is a soft dictionary lookup
#
# A Python `dict` compares the query with each key and returns the value of the one key that
# matches: all or nothing. **Attention** compares the query $q$ with *every* key $k_i$, turns the
# scores into weights that sum to 1, and returns the weighted mix of the values $v_i$:
#
# $$\text{out} = \sum_i \alpha_i\, v_i, \qquad
# \alpha_i = \frac{\exp(q \cdot k_i)}{\sum_{i'} \exp(q \cdot k_{i'})}$$
#
# Soft, so it is differentiable: the network *learns* what to look up.

# %%
keys = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])  # k_1, k_2, k_3: (n, d)
values = torch.tensor([[10.0], [20.0], [30.0]])  # v_1, v_2, v_3: (n, 1)
query = torch.tensor([[2.0, 0.5]])  # q: most like k_1, a little like k_3: (1, d)

hard = values[(query @ keys.T).argmax()]  # a dict: the value of the best key only
soft, alpha = A.attention(query, keys, values)  # alpha = softmax(q . k_i), out = sum alpha_i v_i
print(f"alpha = {alpha.squeeze().numpy().round(2)}: soft {soft.item():.1f}, hard {hard.item():.0f}")

# %% [markdown] slideshow={"slide_type": "notes"}
# Scores 2.0, 0.5 and 1.6; softmax gives about 0.53, 0.12 and 0.35, so the soft lookup returns
# 18.3 where the dict returns 10. Keep the three words: the query asks, the keys are compared,
# the values are handed over. Everything in this lecture is this lookup, with learned queries,
# keys and values. Ask: what happens if every score is equal? (the plain average, 20).
# Minutes: 3

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Attention in RNN seq2seq ([Bahdanau et al., 2014](https://arxiv.org/pdf/1409.0473.pdf))
#
# Keep **every** encoder state $h_i$; output step $t$ looks them up with the query $s_{t-1}$:
#
# <img src="../pics/seq2seq_attention.png" width="90%">

# %% [markdown] slideshow={"slide_type": "notes"}
# The fix is simple to state: don't throw away the encoder states. Query s_{t-1}, keys and
# values h_i, result c_t: the soft lookup of the previous slide. Arrow thickness = attention
# weight alpha_{t,i}; the weights sum to 1 over i.
# Minutes: 2

# %% [markdown] slideshow={"slide_type": "slide"}
# ### The equations
#
# Input $x=[x_1, \dots, x_n]$, output $y=[y_1, \dots, y_m]$; $t = 1..m$ and $i = 1..n$.
#
# $$
# \begin{aligned}
# h_i &= [\overrightarrow{h_i};\overleftarrow{h_i}] && \text{encoder state (bidirectional)}\\[4pt]
# s_t &= f(s_{t-1}, y_{t-1}, c_t) && \text{decoder state}\\[4pt]
# c_t &= \sum_{i=1}^{n}\alpha_{t,i}\,h_i && \text{context vector}\\[4pt]
# \alpha_{t,i} &= \frac{\exp(score(s_{t-1},h_i))}{\sum_{i'=1}^{n}\exp(score(s_{t-1},h_{i'}))} && \text{attention weights}\\[4pt]
# score(s_{t-1},h_i) &= s_{t-1}^\top W_a h_i && \text{Luong’s “general” score}
# \end{aligned}
# $$
#
# The score is from [Luong et al., 2015](https://arxiv.org/pdf/1508.04025.pdf); Bahdanau et al.
# used a small network instead (next slides compare them).

# %% [markdown] slideshow={"slide_type": "notes"}
# Walk through top to bottom. alpha is a softmax over source positions, so the weights are
# positive and sum to one: c_t is a weighted average of the h_i. The score says how well the
# previous decoder state s_{t-1} (the query) matches h_i (the key); Luong's "general" score is a
# bilinear form. y_0 is the start token <s> and s_0 comes from the encoder.
# Minutes: 3

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The library's attention: $\alpha_t$ and $c_t$
#
# The function RNNSearch calls at every step, as it is in `attnlab` (the Transformer's
# `scaled_dot_product_attention` below is the same with the scaled dot score):

# %%
lecture.show_source(A.attention)

# %% [markdown] slideshow={"slide_type": "notes"}
# Read from the installed package when the cell runs, so the slide cannot drift from the code.
# Three lines do the work: the scores, the masked softmax (alpha), and the weighted sum of the
# values (c_t). A backup slide writes the same equations out by hand and checks them.
# Minutes: 1

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Four scores, one attention

# %%
widgets.ScoreLab()

# %% [markdown] slideshow={"slide_type": "notes"}
# Dot s^T h, scaled dot s^T h / sqrt(d), general s^T W_a h and additive v^T tanh(W s + U h)
# (Bahdanau's): one RNNSearch trained on dates with each, all through the same softmax. All
# four are interchangeable: same inputs, a score per (query, key) pair, same softmax. Each panel
# is a trained model's alpha on the same date, with its held-out exact match. The additive one
# is a small neural network; dot products are cheaper and what the Transformer uses. (Backup:
# an edit-me cell that swaps your own score into a trained model.)
# Minutes: 2

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Watch the decoder attend: row $t$ is $\alpha_{t,1..n}$

# %%
widgets.DecodeStepper()  # the shipped rnnsearch-dates; more models in the model chooser

# %% [markdown] slideshow={"slide_type": "notes"}
# Row t of the heatmap is alpha_{t,1..n}: the weights the decoder gives the source characters
# while writing output character t. Ask the audience for a date, type it, then step through.
# Try "3 May 1979", "tuesday december 31 2099", "01/02/1903". Point out: the year digits attend
# to the year, the month digits to the month name; the bi-GRU's attention often sits one
# character off (its neighbours' states already carry the symbol).
# Minutes: 3

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Accuracy against length: Bahdanau's Fig. 2, ours
#
# <img src="../pics/seq2seq_attention_length.png" width="65%">
#
# Digit reversal, each model trained 1000 steps of 128 strings (the model without attention
# with *more* compute: next slide). Without attention accuracy falls with length, as Bahdanau
# et al. saw on English-French.

# %% [markdown] slideshow={"slide_type": "notes"}
# The picture is drawn from the results file of our length experiment, not copied from the
# paper. What we see against the paper's Fig. 2: the same direction (the fixed vector fails on
# long inputs, RNNsearch-50 holds), but sharper: our RNNEncDec is right on 75% of strings of 5-10
# digits, 8% of 11-20 and none beyond 20, where the paper's RNNencdec degrades gradually in BLEU.
# Our -30 attention model is near perfect up to 30 digits (0.99 at 21-30), right on half of the
# strings of 31-40 (0.51) and on none beyond 40: attention does not carry the model past the
# lengths it has seen (the paper's RNNsearch-30 degrades more gently). Backup: where it breaks.
# Minutes: 3

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### A fair comparison? Equal compute, measured
#
# Same data and the same 1000 steps for both. Compute counted by torch's FLOP counter on one
# training batch (`lecture.flops_per_step`, cached by `python -m attnlab deck`):

# %%
lecture.equal_compute()

# %% [markdown] slideshow={"slide_type": "fragment"}
# The model **without** attention had 1.6 times the compute of RNNSearch: more than equal. Its
# held-out accuracy was still creeping up (0.06 to 0.12 over the last 700 steps): under-trained
# at this budget, but not short-changed.

# %% [markdown] slideshow={"slide_type": "notes"}
# The honest statement: at equal (here: greater) compute the design without attention is far
# behind; we did not train it to convergence (its loss still fell slowly at 1000 steps), so
# the gap at long lengths is "at this budget". Wall-clock times differ the other way round
# (RNNSearch's Python loop over output steps is slower per FLOP on a CPU: 1114 s against 153 s):
# FLOPs are the fair measure of work, seconds the fair measure of our patience.
# Minutes: 2

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The Transformer ([Vaswani et al., 2017](https://arxiv.org/abs/1706.03762))
#
# * A seq2seq model with **no RNN and no CNN**: attention alone connects the positions.
# * Encoder tokens attend to every source token; a decoder token to the decoder tokens up to
#   its own position (causal mask) and to every source token (cross-attention).
# * Payoff: an RNN's $h_t$ waits for $h_{t-1}$; self-attention computes all $n$ positions at
#   once. The longest chain of operations that must wait for each other (autograd graph):

# %%
lecture.sequential_steps(lengths=[8, 32, 128, 512], d=32)

# %% [markdown] slideshow={"slide_type": "fragment"}
# Fewer sequential steps, **not less work**: a self-attention layer does $O(n^2 d)$ work (Table 1),
# which a GPU runs at once; on this deck's single CPU thread it is not faster.

# %% [markdown] slideshow={"slide_type": "notes"}
# The whole idea in one sentence: attention replaces recurrence. Careful with "every position
# to every other": true in the encoder, false in the decoder's masked self-attention, and
# cross-attention links the decoder to the source only. "Parallel over positions", measured:
# the RNN's chain grows with n (about 10 operations per step: the GRU cell's gates), attention's
# is 19 whatever n is: nothing in attention waits for a previous position. Whether that is
# faster depends on the hardware: on a GPU with thousands of cores, yes (what made the
# Transformer fast to train); on one CPU thread the total work decides, and attention's n^2 d
# grows faster than the RNN's n d^2 once n > d (a backup slide shows forward times).
# Minutes: 3

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Self-attention
#
# Queries, keys and values all come from **the same sequence** $x_1, \dots, x_n$: each token's
# new vector is a soft lookup over the tokens it may attend to: all of them in the encoder,
# in the decoder only those up to its own position. (Cross-attention: queries from the
# decoder, keys and values from the encoder.)
#
# **It ignores order.** Without positions, shuffle the tokens and the outputs are shuffled the
# same way, nothing else changes:

# %%
torch.manual_seed(0)
mha = A.MultiHeadAttention(d_model=8, num_heads=2)
x, perm = torch.randn(5, 8), torch.tensor([3, 0, 4, 1, 2])  # 5 tokens, no positions; a shuffle
torch.allclose(mha(x[perm], x[perm], x[perm]), mha(x, x, x)[perm], atol=1e-6)  # shuffled alike

# %% [markdown] slideshow={"slide_type": "fragment"}
# Add a positional encoding (position $pos$ gets $PE_{pos}$ whatever token sits there), and
# order matters:

# %%
pe = A.positional_encoding(5, 8)  # PE for pos = 0..4: (n, d)
xs, xp = x + pe, x[perm] + pe  # the tokens in order; shuffled, at the same positions
torch.allclose(mha(xp, xp, xp), mha(xs, xs, xs)[perm], atol=1e-6)

# %% [markdown] slideshow={"slide_type": "notes"}
# Every score is q_t . k_i, and nothing in it says where t and i sit: "1979 May 3" and
# "3 May 1979" would look the same to the model (permutation-equivariant). Adding a position
# vector to each token breaks the symmetry: after the shuffle the tokens meet different
# position vectors, so the output changes in more than its order.
# Minutes: 3

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The sinusoidal positional encoding
#
# $PE_{pos,2i} = \sin(pos/10000^{2i/d})$ and $PE_{pos,2i+1} = \cos(pos/10000^{2i/d})$, with $i$
# the pair index ($i = 0..d/2-1$, $pos$ from 0, as in the paper): one sine and one cosine per
# frequency, the frequency falling with $i$.

# %%
lecture.positional_encoding_picture(n=40, d=64, at=10)

# %% [markdown] slideshow={"slide_type": "notes"}
# Left and middle: the 32 sine and the 32 cosine dimensions, one row per pair index i. Low i
# oscillates fast, high i slowly, like the hands of a clock; together each position gets a
# unique pattern. Right: the dot product of every position's vector with position 10's is
# largest at 10 and falls off with distance, so attention can tell near from far; PE_{pos+k} is
# a rotation of PE_pos in each (sin, cos) pair, so relative offsets are easy to learn.
# Minutes: 2

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Path length
#
# The fewest layers a signal crosses from one position to another (here for $n$ positions,
# kernel $k$): RNN $n-1$, order $O(n)$; convolutions $\lceil (n-1)/(k-1) \rceil$, $O(n/k)$;
# dilated convolutions $\lceil \log_k n \rceil$, $O(\log_k n)$; self-attention 1, $O(1)$.
#
# <img src="../pics/wavenet.png" width="95%">

# %% [markdown] slideshow={"slide_type": "notes"}
# Short paths make long-range dependencies easier to learn: gradients and information pass
# through fewer nonlinear steps. The exact count and its order (Table 1's, constants dropped)
# are two different things: the widget in the backup shows both. The picture: a WaveNet-style
# stack of dilated causal convolutions against ordinary ones.
# Minutes: 2

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Table 1 of Vaswani et al.
#
# | layer type | complexity per layer | sequential operations | maximum path length |
# |---|---|---|---|
# | self-attention | $O(n^2 \cdot d)$ | $O(1)$ | $O(1)$ |
# | recurrent | $O(n \cdot d^2)$ | $O(n)$ | $O(n)$ |
# | convolutional | $O(k \cdot n \cdot d^2)$ | $O(1)$ | $O(\log_k(n))$ |
# | self-attention (restricted to $r$ neighbours) | $O(r \cdot n \cdot d)$ | $O(1)$ | $O(n/r)$ |
#
# $n$: sequence length, $d$: representation size, $k$: kernel size, $r$: neighbourhood size.

# %% [markdown] slideshow={"slide_type": "notes"}
# We measured the middle column (sequential operations) two slides ago. Self-attention is
# cheaper than recurrence whenever n < d, which is usual for sentences (n ~ 50, d ~ 512); for
# very long inputs one restricts attention to a window of r positions. (The convolutional
# row's O(log_k n) is for dilated convolutions.)
# Minutes: 2

# %% [markdown] slideshow={"slide_type": "slide"}
# ### The Transformer at a glance (as we use it: pre-LN)
#
# <img src="../pics/transformer_overview.png" width="100%">

# %% [markdown] slideshow={"slide_type": "notes"}
# Three attentions: self-attention in the encoder, masked self-attention in the decoder (each
# position may attend only to earlier positions), and cross-attention from the decoder to the
# encoder's output. Our model normalises *before* each sub-layer (pre-LN: x + Sublayer(LN(x)),
# with a final LayerNorm after each stack); the paper normalises after the residual sum
# (post-LN). Pre-LN trained faster at our size (measured on dates: 18 s
# to 99% on dates, against 22-35 s post-LN). The decoder reads its outputs shifted right: next
# slide.
# Minutes: 2

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Teacher forcing: training reads the true outputs, shifted right
#
# **Training:** the decoder's input at position $t$ is the *true* $y_{t-1}$ ($y_0$ = `<s>`): all
# positions in one pass; the causal mask keeps position $t$ from seeing $y_t, y_{t+1}, \dots$
# **Decoding:** $y_{t-1}$ is the model's own output, so step $t$ waits for step $t-1$.

# %%
transformer = attnlab.load("transformer-dates")
lecture.teacher_forcing(transformer, "3 May 1979", "1979-05-03")

# %% [markdown] slideshow={"slide_type": "notes"}
# Live on the trained transformer-dates. The passes are counted (a hook on the output layer),
# not assumed: training predicts all 11 positions in 1 pass; decoding needs 11 passes, one per
# token. So the Transformer trains in parallel over positions but still writes one token at a
# time. An RNN is sequential in both (its state s_t needs s_{t-1} even when the inputs are
# known). "Shifted right": the input row is the output row moved one place, with <s> in front.
# Minutes: 3

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Masked (causal) attention
#
# Query $t$ may attend to keys $1..t$ only: `causal_mask(n)` is True on and below the diagonal,
# and `masked_softmax` gives the forbidden keys a weight of exactly 0.

# %%
lecture.show_source(A.causal_mask, A.masked_softmax, A.mask_scores)

# %% [markdown] slideshow={"slide_type": "notes"}
# tril() keeps the lower triangle: row t (the query) allows columns 1..t (the keys). The masked
# softmax sets the forbidden scores to the most negative number before the softmax, so their
# exp is exactly 0, and a row with nothing allowed is all zeros rather than NaN.
# Minutes: 1

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Edit me: the mask
#
# Change the mask and re-run: `mask.T` (only the future), `~mask`, or
# `torch.ones(n, n, dtype=torch.bool)` (no mask). How much weight reaches the future?

# %%
n = 6
mask = A.causal_mask(n)  # <- edit this line
lecture.causal_demo(mask)

# %% [markdown] slideshow={"slide_type": "notes"}
# With the causal mask row t of the right panel sums to 1 over keys 1..t only, and the weight
# on the future is exactly 0: no information flows from words not yet written. With no mask the
# decoder could copy the answer during training (teacher forcing gives it the true outputs) and
# would be useless at test time. A mask of the wrong shape or type gives a one-line message.
# Minutes: 2

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Attention in the Transformer: $Q$, $K$, $V$
#
# <img src="../pics/transformer_attention.png" width="80%">
#
# Query: the token asking. Keys: the tokens it may look at. Values: what each of them hands over.

# %% [markdown] slideshow={"slide_type": "notes"}
# The soft dictionary lookup again, for all queries at once as one matrix product, with
# dot-product scores divided by sqrt(d_k). In self-attention Q = xW^Q, K = xW^K, V = xW^V are
# three linear maps of the same token vectors x (backup: recomputed from the trained model).
# Multi-head: h such attentions in parallel on smaller projections, concatenated, times W^O.
# Minutes: 2

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Self-attention by hand: three tokens
#
# $x_1 = (1, 0)$, $x_2 = (0, 1)$, $x_3 = (1, 1)$; to keep it by hand $Q = K = V = X$, $d_k = 2$.
#
# | query | scores $q_t \cdot k_i / \sqrt{2}$ | weights $\alpha_{t,1..3}$ | output $\sum_i \alpha_{t,i} v_i$ |
# |---|---|---|---|
# | $x_1$ | 0.71, 0, 0.71 | 0.40, 0.20, 0.40 | (0.80, 0.60) |
# | $x_2$ | 0, 0.71, 0.71 | 0.20, 0.40, 0.40 | (0.60, 0.80) |
# | $x_3$ | 0.71, 0.71, 1.41 | 0.25, 0.25, 0.50 | (0.75, 0.75) |

# %%
X = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # x_1, x_2, x_3: (n, d)
out, alpha = A.scaled_dot_product_attention(X, X, X)  # softmax(X X^T / sqrt(2)) X
alpha.round(decimals=2), out.round(decimals=2)

# %% [markdown] slideshow={"slide_type": "notes"}
# Do row 1 on the board: scores 1/sqrt(2) = 0.71, 0, 0.71; exp gives 2.03, 1, 2.03, sum 5.06,
# so the weights are 0.40, 0.20, 0.40 and the output 0.40 (1,0) + 0.20 (0,1) + 0.40 (1,1) =
# (0.80, 0.60). Each token ends up a mix of the tokens like it; x_3, like both, mixes all
# three. The library's function gives the same numbers (the cell). A trained layer only adds
# the three projections W^Q, W^K, W^V in front.
# Minutes: 3

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### $softmax(QK^\top/\sqrt{d_k})\,V$ in the library

# %%
lecture.show_source(A.scaled_dot_product_attention, A.scaled_dot_score)

# %%
Q, K, V = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2)  # m = 3, n = 5, d_k = 4
alpha = torch.softmax(Q @ K.T / 4**0.5, dim=-1)  # softmax(Q K^T / sqrt(d_k)): (m, n)
out = alpha @ V  # ... V: (m, d_v)
lib_out, lib_alpha = A.scaled_dot_product_attention(Q, K, V)
assert torch.allclose(out, lib_out) and torch.allclose(alpha, lib_alpha)

# %% [markdown] slideshow={"slide_type": "notes"}
# The library's body is the equation; the second cell writes it out on three queries and five
# keys and checks it against the library (no output: the assert held; re-run it, any values).
# Everything the Transformer does with attention goes through this one function.
# Minutes: 1

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Why divide by $\sqrt{d_k}$?

# %%
widgets.ScaledDotExplorer()

# %% [markdown] slideshow={"slide_type": "notes"}
# For random q, k with unit-variance entries, q^T k has variance d_k: unscaled, the scores grow
# with d_k and the softmax saturates (one weight near 1, tiny gradients). Press the preset
# (unscaled, d_k = 512): the largest weight per row goes to 1 and the entropy to 0. Tick the
# scaling again: the rows stay soft. The causal-mask toggle zeroes the upper triangle.
# Minutes: 2

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Multi-head: split, attend, concatenate, $W^O$
#
# $MultiHead(Q,K,V) = Concat(head_1, \dots, head_h)\,W^O$ with $head_i = Attention(QW_i^Q, KW_i^K, VW_i^V)$:

# %%
torch.manual_seed(0)
mha = A.MultiHeadAttention(d_model=8, num_heads=2)  # h = 2 heads of d_k = 4
x = torch.randn(5, 8)  # 5 tokens: (n, d_model)


def split(t):  # (n, d_model) -> (h, n, d_k): head i gets columns i*d_k .. (i+1)*d_k
    return t.view(5, 2, 4).transpose(0, 1)


Q, K, V = split(mha.W_q(x)), split(mha.W_k(x)), split(mha.W_v(x))  # each (h, n, d_k)
heads, _ = A.scaled_dot_product_attention(Q, K, V)  # head_i, all at once: (h, n, d_k)
concat = heads.transpose(0, 1).reshape(5, 8)  # Concat(head_1, head_2): (n, d_model)
out = mha.W_o(concat)  # ... W^O: (n, d_model)
assert torch.allclose(out, mha(x, x, x), atol=1e-6)  # the library's MultiHeadAttention

# %% [markdown] slideshow={"slide_type": "notes"}
# One projection per role, then the columns are cut into h groups: each head attends in its own
# d_k = d_model / h dimensions, at the same total cost as one big head. The heads' outputs are
# put side by side again and mixed by W^O. The library's forward does exactly these steps (its
# source is in the backup).
# Minutes: 2

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Why several heads? Measured
#
# One head is one softmax per query: one weighted average, one place to look. With $h$ heads a
# token can look in $h$ places at once. Switch heads off in every attention of the trained
# `transformer-dates` (their outputs set to zero before $W^O$):

# %%
lecture.heads_measured()  # lecture.head_study(transformer, n=200), cached: 4 s

# %% [markdown] slideshow={"slide_type": "notes"}
# With all 4 heads it is right on every fresh date; any one head alone gets almost nothing
# right (0-1%), and without any one of them it gets only 32-61% right. So the heads are not
# copies: the work is split among them, and no head can be spared. (Setting a head to zero is a
# crude probe: the model never saw that; but no single head suffices.) The real-language slides
# measure what heads do on words.
# Minutes: 3

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### An encoder block: residual, LayerNorm, feed-forward
#
# * **Residual** $x + \dots$: each sub-layer adds a correction; the signal and the gradient
#   have a straight path through the stack.
# * **LayerNorm**: each token's vector rescaled to mean 0, variance 1 (then a learned scale):
#   keeps the scale steady from layer to layer.
# * **Feed-forward**: the same two-layer MLP ($d \to 4d \to d$) on every token on its own: the
#   layer's per-token computation; attention only mixes tokens.

# %%
lecture.show_source(attnlab.models.transformer.EncoderLayer.forward)

# %% [markdown] slideshow={"slide_type": "notes"}
# Pre-LN, as our model: x + SelfAttn(LN(x)), then x + FFN(LN(x)). Ask: what would happen
# without the residual? (each layer would have to re-create the whole vector; deep stacks train
# badly.) The exercise asks students to write this block and runs it inside transformer-dates.
# Minutes: 3

# %% [markdown] slideshow={"slide_type": "slide"}
# ### The trained Transformer's three attentions
#
# `transformer-dates` on one date, last layer, mean over its 4 heads. The decoder's queries and
# keys are its inputs, the outputs shifted right: `<s>`, $y_1$, $y_2$, ...

# %%
lecture.three_attentions(transformer, "3 May 1979")

# %% [markdown] slideshow={"slide_type": "notes"}
# Left: the encoder's tokens attend to each other (no mask: every token sees the whole date).
# Middle: the decoder's masked self-attention, the causal triangle: the query at input y_{t-1}
# sees the inputs <s>, y_1..y_{t-1} only, never y_t, the output it is about to write. Right:
# cross-attention; the query at input y_{t-1} writes y_t: the row of <s> writes the first year
# digit and looks at the year.
# Minutes: 2

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Real language: Bahdanau's Fig. 3, ours
#
# `rnnsearch-en-fr`, our RNNSearch, on interface strings of 60 open-source packages. A string
# of the **test split** (neither it nor one a word away from it was in training):

# %%
language = load_results()  # measured once over the test split, with the models below
rnnsearch_fr = attnlab.load("rnnsearch-en-fr")
lecture.held_out_example(rnnsearch_fr, language["word_order"])

# %% [markdown] slideshow={"slide_type": "notes"}
# Read it like Bahdanau's Fig. 3: each row is one French output piece, its weights over the
# English pieces (a word may be several pieces; "##" marks a piece that continues a word). The
# string is from the test split (neither it nor a string one word away from it was in
# training) and the output is the reference, word for word. French reorders the words: where
# a later French word looks further left in the English than the word before it, the rows
# cross: the word-order swap of "European Economic Area" -> "zone économique européenne"
# (the adjective moves behind the noun). The example was found by a rule over the test split
# (the most decided alpha among the strings the model translates right with crossing alpha),
# not picked by hand: the cell's text names it. The bi-GRU's weight is often spread over
# neighbours: its states already carry their neighbours' words.
# Minutes: 3

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### German moves the verb to the end
#
# `transformer-en-de`, one head of its cross-attention, on a held-out string:

# %%
transformer_de, verb = attnlab.load("transformer-en-de"), language["verb_final"]
lecture.held_out_example(transformer_de, verb, layer=verb["layer"], head=verb["head"])

# %% [markdown] slideshow={"slide_type": "notes"}
# English puts the verb first, German at the end (the infinitive of a command: "Alle Tabs
# schließen"). One head of the last layer, found by a rule over the test split (the shortest
# right verb-final string where some head looks from the verb back at the first English word,
# read per word: a word's weight is the sum over its pieces): writing the German verb, it
# attends to the English verb at the other end. Other heads do other things: the
# DecodeStepper and the HeadView show each head.
# Minutes: 2

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Self-attention on real words, per head

# %%
lecture.self_attention_heads(transformer_de, "Close all tabs", layer=0)

# %% [markdown] slideshow={"slide_type": "notes"}
# The four heads of the first encoder layer of transformer-en-de on one phrase: each query row
# sums to 1. Ask the room what each head seems to do; then the next slide measures it.
# Minutes: 2

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What the heads do, measured over the test split
#
# Where each head's strongest weight falls, for every query of every test string, against
# chance (the same fraction if the strongest key were drawn at random):

# %%
lecture.head_roles_table(language["head_roles"]["transformer-en-de"], layer=0)

# %% [markdown] slideshow={"slide_type": "notes"}
# In our small model every head does something more often than chance, but none does one job
# most of the time: the heads are only weakly specialised, and reading a job off one picture
# (last slide) would have overstated it. That is the honest, measured answer to "what do the
# heads do" at this size; cleanly "syntactic" heads are reported for far larger models.
# Minutes: 2

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Attention is not always an explanation
#
# Hide one source piece at a time (replace it by `<unk>`) and measure how much the probability
# of the output piece drops: that is what the output *depends on*. Beside it, $\alpha$:

# %%
occlusion = language["alpha_vs_occlusion"]
lecture.alpha_and_occlusion(occlusion["example"], occlusion["agreement"])

# %% [markdown] slideshow={"slide_type": "notes"}
# Jain and Wallace (2019): attention weights need not say what the output depends on. At the
# marked row the model writes an output word while alpha points at one English word; hiding
# that word (replacing it by <unk>, the output kept fixed) barely changes the probability of
# the output word, hiding another one changes it most (the cell's text gives the numbers). Over
# the test split, alpha's favourite word is the most costly word to hide at only some of the
# steps (the percentage in the cell's text). Attention is a mechanism the model uses, not an
# explanation of its output.
# Minutes: 3

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Your phrase, translated live

# %%
widgets.DecodeStepper("transformer-en-fr", text="Default cell type")

# %% [markdown] slideshow={"slide_type": "notes"}
# Ask the room for a phrase from the menus they see every day: "Close all tabs", "Save
# notebook", "Restart kernel". Nothing is unknown to it: a rare word is written in pieces, and
# the line beside the output says whether the phrase (or one a word away) was in training.
# Step through and point at the rows that cross (word-order swaps). The model chooser has the
# EN->DE Transformer and the EN->FR RNNSearch too.
# Minutes: 3

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Vaswani's Table 2, in miniature

# %%
lecture.language_table(language)

# %% [markdown] slideshow={"slide_type": "notes"}
# Not comparable scores: Vaswani et al. test on newstest2014 news sentences; we test on the
# held-out interface strings (at most 15 English words, cased, one reference), far shorter
# and easier. The compute is the point: minutes on a 2-core CPU against 12 hours (base) to 3.5
# days (big) on 8 GPUs. Read our rows against the baselines: copying the English, and a
# word-by-word dictionary learned from the training split. BLEU rewards word order, chrF
# hardly sees it (and ignores spaces), so the dictionary is a strong chrF baseline: short menu
# strings are often translated word for word, and it keeps every name. The README gives both
# test splits (in domain, and two applications the models never saw) with confidence
# intervals. The scores are sacrebleu's, with their signatures in results/language.json;
# every number in the table is read from that file.
# Minutes: 3

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Our own results table: dates to ISO

# %%
lecture.model_table()

# %% [markdown] slideshow={"slide_type": "notes"}
# Same task, same data, the three designs of this lecture, read from each checkpoint's card
# (what our training script measured). RNNSearch reaches its target after 100 steps; the
# fixed-vector RNNEncDec has a fixed budget of 200 steps (twice that) and stops there; the
# Transformer needs more parameters and more steps (800) at this size. The time is the
# wall-clock time of the whole training run, held-out measurements included, on one CPU thread
# of a shared machine: the same recipe takes 10-35 s depending on the machine's load, so compare
# the steps.
# Minutes: 1

# %% [markdown] slideshow={"slide_type": "slide"}
# ## References
#
# * I. Sutskever, O. Vinyals, Q. V. Le. [Sequence to sequence learning with neural networks](https://papers.nips.cc/paper/5346-sequence-to-sequence-learning-with-neural-networks.pdf). NIPS 2014.
# * D. Bahdanau, K. Cho, Y. Bengio. [Neural machine translation by jointly learning to align and translate](https://arxiv.org/pdf/1409.0473.pdf). 2014.
# * A. Vaswani et al. [Attention is all you need](https://arxiv.org/abs/1706.03762). arXiv:1706.03762 (the NIPS 2017 version reports 41.0 on EN-FR).
# * M.-T. Luong, H. Pham, C. D. Manning. [Effective approaches to attention-based neural machine translation](https://arxiv.org/pdf/1508.04025.pdf). EMNLP 2015.
# * S. Jain, B. C. Wallace. [Attention is not explanation](https://arxiv.org/abs/1902.10186). NAACL 2019.
# * [Attention? Attention!](https://lilianweng.github.io/lil-log/2018/06/24/attention-attention.html), Lilian Weng; [The Annotated Transformer](http://nlp.seas.harvard.edu/2018/04/03/attention.html).
#
# Exercises: `notebooks/07_attention_exercises.ipynb`. Backup slides follow.

# %% [markdown] slideshow={"slide_type": "notes"}
# The first four are the papers behind the slides; Jain and Wallace for "attention is not
# explanation"; the rest are where to read next. The exercises notebook has students write each
# score, the masked softmax, one decoding step, scaled dot-product attention and an encoder
# block, and run their function inside the trained models.
# Minutes: 1

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Backup slides
#
# Cut from the main path, kept for questions: the equations checked by hand, your own score in a
# trained model, where the alignment breaks, training live, forward times on one thread, path
# lengths explored, $Q$/$K$/$V$ of the trained model, the library's multi-head attention, every
# head on a date you type (HeadView), Table 2 of Vaswani et al., and rare words in German.

# %% [markdown] slideshow={"slide_type": "notes"}
# Not part of the 90 minutes: open one of these when a question asks for it.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Backup: the equations, written out and checked

# %%
torch.manual_seed(0)
n, d = 5, 4
h = torch.randn(n, d)  # h_1..h_n: the encoder states, (n, d)
s_prev = torch.randn(1, d)  # s_{t-1}: the decoder state, (1, d)
score = A.GeneralScore(d, d)  # score(s_{t-1}, h_i) = s_{t-1}^T W_a h_i

e = s_prev @ score.W_a @ h.T  # score(s_{t-1}, h_i) for i = 1..n: (1, n)
alpha = e.exp() / e.exp().sum(-1, keepdim=True)  # alpha_{t,i} = exp(e_i) / sum_i' exp(e_i')
c_t = alpha @ h  # c_t = sum_i alpha_{t,i} h_i: (1, d)

lib_c_t, lib_alpha = A.attention(s_prev, h, h, score)  # the library's function
assert torch.allclose(alpha, lib_alpha) and torch.allclose(c_t, lib_c_t)
alpha.detach().round(decimals=2)

# %% [markdown] slideshow={"slide_type": "notes"}
# The Annotated Transformer way: the equation in three lines, then an assert that the library
# computes the same. If a student changes a line (say, drops the exp), the assert says so.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Backup: edit me, your score inside a trained model

# %%
# s = s_{t-1}: (B, 1, d), h = h_1..h_n: (B, n, d) -> the dot score s^T h_i: (B, 1, n). Edit it:
widgets.DecodeStepper("rnnsearch-dates-dot", score=lambda s, h: s @ h.transpose(-2, -1))

# %% [markdown] slideshow={"slide_type": "notes"}
# Edit the lambda, Shift+Enter, then step through the decoding. The model
# (rnnsearch-dates-dot, trained with the dot score) keeps its trained weights; only the score
# is ours. Ask the room first: will the date survive? Good edits to try: `/ 8` (softer
# attention, usually still right: the trained scores are large), `-s @ ...` (the decoder looks
# at the least similar character: the date falls apart), zeros (uniform alpha: it guesses from
# the average of all characters), or a typo (the error appears in the widget, the lecture goes
# on).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Backup: where the alignment breaks
#
# `rnnsearch-reverse-30` (trained on 5-30 digits) reverses 45 digits. Output $t$ should attend
# to source digit $n+1-t$ (dotted); the red line is its first wrong digit:

# %%
lecture.alignment_failure(attnlab.load("rnnsearch-reverse-30"), length=45, seed=0)

# %% [markdown] slideshow={"slide_type": "notes"}
# Read it from the top: for the first 27 outputs the attention walks down the anti-diagonal,
# one source digit per output, as on the strings it was trained on. Past about 30 outputs, a
# length it has never written, it moves faster than one digit per step, skips digits and
# stops early (40 digits out for 45 in). To step through it live, run
# widgets.DecodeStepper("rnnsearch-reverse-30", text="865230001869569765592860385077810805024440010")
# (the 45 digits of the picture).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Backup: train it yourself, live
#
# RNNSearch on dates to 99% exact match: about 100 steps, 10-35 s on one CPU thread. Set
# `LIVE = True` and run; otherwise the shipped checkpoint of the same recipe is used.

# %%
LIVE = False  # True: train now (about half a minute)
if LIVE:
    from attnlab.pictures.training_plots import LivePlot
    from attnlab.training.loop import fit

    live = LivePlot("RNNSearch on dates")
    live_model, history = fit("rnnsearch", "dates", target=0.99, observer=live)
else:
    live_model = attnlab.load("rnnsearch-dates")
live_model.translate("3 May 1979")

# %% [markdown] slideshow={"slide_type": "notes"}
# Run it while talking: the loss falls within a few seconds and the accuracy jumps to 99% after
# about 100 steps of 128 dates. The progress plot and the time differ from run to run.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Backup: forward time on one CPU thread

# %% tags=["nbval-ignore-output"]
timings = lecture.time_rnn_vs_attention(lengths=[16, 64, 256, 512], d=256, repeats=1)
lecture.plot_timings(timings)

# %% [markdown] slideshow={"slide_type": "notes"}
# One thread: nothing runs in parallel, so the time follows the total work. The GRU's grows
# like n d^2, attention's like n^2 d: once n is past d (256 here) attention is slower. This is
# why "parallel" is about sequential steps and parallel hardware, not about a CPU thread.
# (Wall-clock times: they differ from run to run.)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Backup: path lengths, explored

# %%
widgets.PathLengthExplorer()

# %% [markdown] slideshow={"slide_type": "notes"}
# Move n and k: the exact count (the formula with its value) and, apart, Table 1's order. The
# RNN's path grows with n, the contiguous convolution's with n/k, the dilated one's with
# log_k n, and self-attention's stays 1.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Backup: $Q$, $K$ and $V$ of the trained model
#
# $Q = xW^Q$, $K = xW^K$, $V = xW^V$ from the same token vectors $x$: `transformer-dates`, its
# first encoder layer, head 1 recomputed by hand:

# %%
layer = transformer.encoder_layers[0]  # the first encoder layer
src = transformer.encode_source("30 June 2001")  # token ids: (1, n)
x = layer.ln1(transformer.src_emb(src) + A.positional_encoding(src.shape[1], 64))  # (1, n, d)
Q, K, V = layer.self_attn.W_q(x), layer.self_attn.W_k(x), layer.self_attn.W_v(x)  # (1, n, d)

Q1, K1 = Q[0, :, :16], K[0, :, :16]  # head 1: the first d_k = 64 / 4 = 16 columns
weights = torch.softmax(Q1 @ K1.T / 16**0.5, dim=-1)  # softmax(Q K^T / sqrt(d_k)): (n, n)
model_weights = transformer.attention_weights("30 June 2001")["encoder_self"][0, 0]
assert torch.allclose(weights, torch.from_numpy(model_weights), atol=1e-5)
tuple(Q.shape), tuple(K.shape), tuple(V.shape)

# %% [markdown] slideshow={"slide_type": "notes"}
# Three linear maps of the same x (after the layer norm: pre-LN). Recomputing head 1's weights
# by hand gives exactly the weights the model reports.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Backup: the library's multi-head attention

# %%
lecture.show_source(A.MultiHeadAttention.forward)

# %% [markdown] slideshow={"slide_type": "notes"}
# The same four steps as the multi-head slide, with a batch dimension and a mask shared by the
# heads.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Backup: every head, on a date you type

# %%
widgets.HeadView(transformer, text="3 May 1979")

# %% [markdown] slideshow={"slide_type": "notes"}
# Every head of one layer of transformer-dates, self- and cross-attention (toggles), on a date
# the room types. What the heads do is measured on the heads slide (switching them off), not
# read off these pictures.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Backup: Table 2 of Vaswani et al.
#
# <img src="../pics/transformer_results.png" width="85%">

# %% [markdown] slideshow={"slide_type": "notes"}
# Table 2 of the paper, redrawn. The arXiv paper reports 41.8 BLEU for the big model on EN-FR;
# the NIPS 2017 proceedings version 41.0. Both are above every earlier single model (best:
# MoE, 40.56); 41.0 is below the GNMT+RL and ConvS2S ensembles (41.16, 41.29). On EN-DE the
# base model's 27.3 is above the best ensemble (ConvS2S, 26.36) at 3.3e18 FLOPs against that
# ensemble's 7.7e19; the big model reaches 28.4.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Backup: German compounds and rare words
#
# `transformer-en-de` writes a word it could not learn whole in subword pieces it knows:

# %%
rare = language["rare_words"]
print(lecture.rare_words_counts(rare))
lecture.held_out_example(transformer_de, rare["example"], layer=rare["example"]["layer"])

# %% [markdown] slideshow={"slide_type": "notes"}
# German writes "customer name" as one word, Kundenname: a model with a vocabulary of whole
# words learns such a word from one example, or never sees it. Our models read and write
# subword pieces (byte-pair encoding, Sennrich et al. 2016, learned from the training split):
# frequent words are one piece, a rare word or a compound is written in frequent pieces
# ("Kunden" "##name"), and a character no piece covers is written as its bytes, so nothing is
# ever <unk>. The printed line counts, over the test split, the outputs that hold a word
# written in pieces and how many of those words are words of the reference.
