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
# <small>Every picture in this deck is drawn by our code, every model was trained by our own
# scripts in seconds on a laptop CPU, and every cell can be edited and run during the talk.</small>

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

# %% slideshow={"slide_type": "skip"}
# The lecture's code lives in the attnlab package; this cell only imports it and fixes seeds.
import torch

import attnlab
from attnlab import attention as A
from attnlab import lecture, widgets

torch.manual_seed(0)
torch.set_num_threads(1)  # small, latency-bound work: one thread is fastest on a shared machine

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Sequence to sequence ([Sutskever et al., 2014](https://papers.nips.cc/paper/5346-sequence-to-sequence-learning-with-neural-networks.pdf))
#
# * An **encoder** RNN reads the source sequence $S$ and compresses it into **one vector of fixed size**.
# * A **decoder** RNN unrolls the target sequence $T$ (say, a translation) from that vector alone.
# * The two lengths need not match: $length(S) \neq length(T)$ in general.
#
# <img src="../pics/seq2seq_lite.png" width="90%">
#
# What could go wrong?

# %% [markdown] slideshow={"slide_type": "fragment"}
# **The bottleneck:** the meaning of the *whole* input must fit into that one vector, however
# long the input is. Short inputs fit; long ones do not.

# %% [markdown] slideshow={"slide_type": "notes"}
# Ask the room before revealing the fragment. The vector has the same size for a 3-word and a
# 50-word sentence: something has to give. Next: we see it happen with our own models.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The bottleneck, live
#
# `rnnenc-dates` is exactly this design (a GRU encoder; its final state is all the decoder
# sees), trained by us to rewrite dates in ISO form:

# %%
rnnenc = attnlab.load("rnnenc-dates")
rnnenc.translate("3 May 1979"), rnnenc.translate("Wednesday, 17 September 2064")

# %% [markdown] slideshow={"slide_type": "fragment"}
# Dates are short. Now reverse digit strings: the same design without attention against
# RNNSearch (with attention, next slides), both trained with the same budget on lengths 5 to 60:

# %%
lecture.reverse_demo(["rnnenc-reverse", "rnnsearch-reverse"], lengths=[6, 12, 25, 40])

# %% [markdown] slideshow={"slide_type": "notes"}
# The fixed-vector model copes with short strings and collapses on long ones: it has to
# remember every digit in one state vector. The attention model reads them back when needed.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Attention in RNN seq2seq ([Bahdanau et al., 2014](https://arxiv.org/pdf/1409.0473.pdf))
#
# * Keep **every** encoder hidden state, not only the last one.
# * At each output step the decoder decides how much **attention** to pay to each source token:
#   a weighted average of the encoder states, recomputed for every output token.
#
# <img src="../pics/seq2seq_attention.png" width="78%">

# %% [markdown] slideshow={"slide_type": "notes"}
# The fix is simple to state: don't throw away the encoder states. The decoder gets a fresh
# summary of the input at every step, weighted by relevance. The picture: arrows thickness =
# attention weight.

# %% [markdown] slideshow={"slide_type": "slide"}
# ### The equations
#
# Input $x=[x_1, \dots, x_n]$, output $y=[y_1, \dots, y_m]$.
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
# positive and sum to one: c_t is a weighted average of the h_i. The score is any function that
# says how well the previous decoder state s_{t-1} matches h_i (the same query in the softmax
# and in the score); Luong's "general" score is a bilinear form.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The library's attention: $\alpha_t$ and $c_t$
#
# The function every model of this lecture calls, as it is in `attnlab` (docstring left out):

# %%
lecture.show_source(A.attention)

# %% [markdown] slideshow={"slide_type": "notes"}
# This is read from the installed package when the cell runs, so the slide cannot drift from the
# code. Three lines do the work: the scores, the masked softmax (alpha), and the weighted sum of
# the values (c_t). The next slide writes the same equations out by hand and checks them.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The equations, written out and checked

# %%
torch.manual_seed(0)
n, d = 5, 4
h = torch.randn(n, d)  # h_1..h_n: the encoder states, (n, d)
s_prev = torch.randn(1, d)  # s_{t-1}: the decoder state, (1, d)
score = A.GeneralScore(d, d)  # score(s, h_i) = s^T W_a h_i

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
# ### Four scores, one attention

# %%
widgets.ScoreLab()

# %% [markdown] slideshow={"slide_type": "notes"}
# Dot s^T h, scaled dot s^T h / sqrt(d), general s^T W_a h and additive v^T tanh(W s + U h)
# (Bahdanau's): one RNNSearch trained on dates with each, all through the same softmax. All four are interchangeable: same inputs, a score per (query, key) pair, same softmax. Each
# panel is a trained model's alpha on the same date, with its held-out exact match. The additive
# one is a small neural network; dot products are cheaper and what the Transformer uses.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Edit me: your score inside a trained model

# %%
# s = s_{t-1}: (B, 1, d), h = h_1..h_n: (B, n, d) -> the dot score s^T h_i: (B, 1, n). Edit it:
widgets.DecodeStepper("rnnsearch-dates-dot", score=lambda s, h: s @ h.transpose(-2, -1))

# %% [markdown] slideshow={"slide_type": "notes"}
# Edit the lambda, Shift+Enter, then step through the decoding. The model
# (rnnsearch-dates-dot, trained with the dot score) keeps its trained weights; only the score
# is ours. Ask the room first: will the date survive? Good edits to try:
# `/ 8` (softer attention, usually still right: the trained scores are large), `-s @ ...`
# (the decoder looks at the least similar character: the date falls apart), zeros (uniform
# alpha: it guesses from the average of all characters), or a typo (the error appears in the
# widget, the lecture goes on).

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Accuracy against sentence length
#
# <img src="../pics/seq2seq_attention_length.png" width="62%">
#
# Our reversal models, trained with the same budget on lengths 5-60 or 5-30: without attention
# (RNNEncDec) accuracy collapses as inputs grow; with attention (RNNSearch) it holds, but only
# over the lengths it was trained on. Bahdanau et al. (Fig. 2) saw the same on English-French.

# %% [markdown] slideshow={"slide_type": "notes"}
# The picture is drawn from the results file of our length experiment, not copied from the
# paper. The shape matches the paper's: the fixed-length vector fails on long inputs, while
# RNNsearch-50 stays high past 50 words. Be honest about our -30 attention model: trained on
# 5-30 digits it is nearly perfect up to 30 (0.99 exact match at 21-30), right on only about
# half of the strings of 31-40 digits (0.51), and never right beyond 40 (0.00): attention does
# not by itself carry the model past the lengths it has seen. Next slide: where it breaks.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Where the alignment breaks
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

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Watch the decoder attend: row $t$ is $\alpha_{t,1..n}$

# %%
widgets.DecodeStepper()  # the shipped rnnsearch-dates; the Transformer in the model chooser

# %% [markdown] slideshow={"slide_type": "notes"}
# Row t of the heatmap is alpha_{t,1..n}: the weights the decoder gives the source characters
# while writing output character t. Ask the audience for a date, type it, then step through. Try "3 May 1979",
# "tuesday december 31 2099", "01/02/1903". Point out: the year digits
# attend to the year, the month digits to the month name, the attention of the bi-GRU often
# sits one character off (its neighbours' states already carry the symbol).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Train it yourself, live
#
# RNNSearch on dates to 99% exact match on 2 CPU cores, in seconds (skip this cell and the
# shipped checkpoint is used instead):

# %% tags=["nbval-ignore-output"]
from attnlab.train import fit

live_model, history = fit("rnnsearch", task="dates", target_accuracy=0.99)

# %%
live_model.translate("3 May 1979")

# %% [markdown] slideshow={"slide_type": "notes"}
# Run it while talking: the loss falls within a few seconds and the accuracy jumps to 99% after
# about 100 steps of 128 dates. If the room's laptop is slow, skip it: the shipped checkpoint is
# the same recipe. The progress plot and the time differ from run to run.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The Transformer ([Vaswani et al., 2017](https://arxiv.org/abs/1706.03762))
#
# * A seq2seq model with **no RNN and no CNN**.
# * Attention alone relates every position of the input and the output to every other.
# * Payoff: training is **parallel** over positions; no backpropagation through time.

# %% [markdown] slideshow={"slide_type": "notes"}
# The whole idea in one sentence: attention replaces recurrence. Next slide: what that buys,
# measured on this machine.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Parallel over positions, measured
#
# An RNN needs $n$ steps one after the other; one self-attention layer needs $O(1)$
# sequential steps for any $n$. The forward pass of one layer, on this machine:

# %% tags=["nbval-ignore-output"]
timings = lecture.time_rnn_vs_attention(lengths=[16, 32, 64, 128, 256, 512], d=256, repeats=3)
lecture.plot_timings(timings)

# %% [markdown] slideshow={"slide_type": "notes"}
# The RNN's time grows linearly because step t waits for step t-1: n small steps, one after
# another. Attention computes all n positions with a few large matrix products, which run
# well even on the single CPU thread this deck uses, and spread over all cores of a GPU. Its
# work grows with n^2 d, so once n is well past d (here 256) it catches up: Table 1 again. On a
# GPU, with thousands of cores, the gap is far larger: that is what made the Transformer fast
# to train. (Wall-clock times: they differ from run to run.)

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Self-attention and path length
#
# **Self-attention** relates the positions of *one* sequence to each other: queries, keys and
# values all come from the same sequence.
#
# **Path length** between two positions: how many layers a signal crosses to get from one to the
# other. RNN: $O(n)$; convolutions: $O(n/k)$ contiguous, $O(\log_k(n))$ dilated; self-attention:
# $O(1)$, a constant path between any pair of positions.
#
# <img src="../pics/wavenet.png" width="95%">

# %% [markdown] slideshow={"slide_type": "notes"}
# Short paths make long-range dependencies easier to learn: gradients and information pass
# through fewer nonlinear steps. The picture is a WaveNet-style stack of dilated causal
# convolutions: the last output sees every input after log_k(n) layers.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Path lengths, explored

# %%
widgets.PathLengthExplorer()

# %% [markdown] slideshow={"slide_type": "notes"}
# Move n and k: the RNN's path grows with n, the contiguous convolution's with n/k, the dilated
# one's with log_k n, and self-attention's stays 1.

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
# Self-attention is cheaper than recurrence whenever n < d, which is usual for sentences
# (n ~ 50, d ~ 512); for very long inputs one restricts attention to a window of r positions.

# %% [markdown] slideshow={"slide_type": "slide"}
# ### The Transformer at a glance
#
# <img src="../pics/transformer_overview.png" width="96%">

# %% [markdown] slideshow={"slide_type": "notes"}
# Three attentions: self-attention in the encoder, masked self-attention in the decoder (each
# position may attend only to earlier positions, so the model cannot look at words it has not
# predicted yet), and cross-attention from the decoder to the encoder's output. At training time
# all target positions are processed at once, and the mask is what keeps this honest.

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Attention in the Transformer
#
# <img src="../pics/transformer_attention.png" width="60%">
#
# * Query $Q$: the word asking (the current position)
# * Keys $K$: the words it may look at
# * Values $V$: what each of those words hands over
#
# $$Attention(Q, K, V) = softmax\left(\frac{QK^\top}{\sqrt{d_k}}\right)V$$

# %% [markdown] slideshow={"slide_type": "notes"}
# Find the keys most similar to the query; return the mix of their values. Same recipe as
# Bahdanau with dot-product scores, computed for all queries at once as one matrix product.
# Multi-head: h such attentions in parallel on smaller projections, concatenated.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### $Q$, $K$ and $V$ are projections of the input
#
# In self-attention all three come from the same token vectors $x$: $Q = xW^Q$, $K = xW^K$,
# $V = xW^V$. Here with the trained `transformer-dates`, its first encoder layer:

# %%
transformer = attnlab.load("transformer-dates")
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
# Three linear maps of the same x (after the layer norm, since this model normalises before
# each sub-layer). Recomputing head 1's weights by hand gives exactly the weights the model
# reports: there is nothing else inside. The dimension 64 is d_model; 4 heads of 16 each.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### $softmax(QK^\top/\sqrt{d_k})\,V$ in the library

# %%
lecture.show_source(A.scaled_dot_product_attention, A.scaled_dot_score)

# %%
Q, K, V = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2)  # m = 3, n = 5, d_k = 4
weights = torch.softmax(Q @ K.T / 4**0.5, dim=-1)  # softmax(Q K^T / sqrt(d_k)): (m, n)
out = weights @ V  # ... V: (m, d_v)
lib_out, lib_weights = A.scaled_dot_product_attention(Q, K, V)
assert torch.allclose(out, lib_out) and torch.allclose(weights, lib_weights)

# %% [markdown] slideshow={"slide_type": "notes"}
# The library's body is the equation; the second cell writes it out on three queries and five
# keys and checks it against the library (no output: the assert held; re-run it, any values). Everything the Transformer does with attention goes
# through this one function.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Why divide by $\sqrt{d_k}$?

# %%
widgets.ScaledDotExplorer()

# %% [markdown] slideshow={"slide_type": "notes"}
# For random q, k with unit-variance entries, q^T k has variance d_k: unscaled, the scores grow
# with d_k and the softmax saturates (one weight near 1, tiny gradients). Slide d_k with and
# without the scaling. Press the
# preset (unscaled, d_k = 512): the largest weight per row goes to 1 and the entropy
# to 0: the softmax is saturated and its gradient vanishes. Tick the scaling again: the rows
# stay soft. The causal-mask toggle zeroes the upper triangle.

# %% [markdown] slideshow={"slide_type": "subslide"}
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
assert torch.allclose(out, mha(x, x, x)[0], atol=1e-6)  # the library's MultiHeadAttention

# %% [markdown] slideshow={"slide_type": "notes"}
# One projection per role, then the columns are cut into h groups: each head attends in its own
# d_k = d_model / h dimensions, at the same total cost as one big head. The heads' outputs are
# put side by side again and mixed by W^O. The library's forward does exactly these steps (next
# slide).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The library's multi-head attention

# %%
lecture.show_source(A.MultiHeadAttention.forward)

# %% [markdown] slideshow={"slide_type": "notes"}
# The same four steps as the cell before, with a batch dimension and a mask shared by the heads.

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Masked (causal) attention
#
# Position $t$ may attend to positions $1..t$ only: `causal_mask(n)` is True on and below the
# diagonal, and `masked_softmax` gives the forbidden positions a weight of exactly 0.

# %%
lecture.show_source(A.causal_mask, A.masked_softmax)

# %% [markdown] slideshow={"slide_type": "notes"}
# tril() keeps the lower triangle: row t (the query) allows columns 1..t (the keys). The masked
# softmax sets the forbidden scores to the most negative number before the softmax, so their
# exp is exactly 0, and a row with nothing allowed is all zeros rather than NaN.

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
# With the causal mask row t of the right panel sums to 1 over positions 1..t only, and the
# weight on the future is exactly 0: no information flows from words not yet written. With no
# mask the decoder could copy the answer during training and would be useless at test time. A
# mask of the wrong shape or type gives a one-line message, not a traceback.

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Why positions? Attention ignores order
#
# Without positions, self-attention is *permutation-equivariant*: shuffle the input tokens and
# the output is shuffled the same way, nothing else changes.

# %%
torch.manual_seed(0)
mha = A.MultiHeadAttention(d_model=8, num_heads=2)
x = torch.randn(5, 8)  # 5 tokens, no positions: (n, d)
perm = torch.tensor([3, 0, 4, 1, 2])  # a shuffle of the 5 tokens
y, _ = mha(x, x, x)
y_shuffled, _ = mha(x[perm], x[perm], x[perm])
torch.allclose(y_shuffled, y[perm], atol=1e-6)  # the same outputs, shuffled

# %% [markdown] slideshow={"slide_type": "fragment"}
# Add the positional encoding (position $i$ gets $PE_i$ whatever token sits there), and order
# matters:

# %%
pe = A.positional_encoding(5, 8)  # PE_1..PE_5: (n, d)
y, _ = mha(x + pe, x + pe, x + pe)
xs = x[perm] + pe  # the shuffled tokens at positions 1..5
y_shuffled, _ = mha(xs, xs, xs)
torch.allclose(y_shuffled, y[perm], atol=1e-6)

# %% [markdown] slideshow={"slide_type": "notes"}
# Every score is q_i . k_j, and nothing in it says where i and j sit: "1979 May 3" and
# "3 May 1979" would look the same to the model. Adding a position vector to each token breaks
# the symmetry: after the shuffle the tokens meet different position vectors, so the output
# changes in more than its order.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The sinusoidal positional encoding
#
# $PE_{pos,2i} = \sin(pos/10000^{2i/d})$, $PE_{pos,2i+1} = \cos(pos/10000^{2i/d})$, added to
# each token's vector: a unique pattern per position, similar for nearby positions.

# %%
lecture.positional_encoding_picture(n=40, d=64, at=10)

# %% [markdown] slideshow={"slide_type": "notes"}
# Left: each column is one position's vector; low dimensions oscillate fast, high ones slowly,
# like the hands of a clock. Right: the dot product of every position's vector with position
# 10's is largest at 10 and falls off with distance, so attention can tell near from far; and
# PE_{pos+k} is a linear function of PE_pos, so relative offsets are easy to learn.

# %% [markdown] slideshow={"slide_type": "slide"}
# ### The trained Transformer's three attentions
#
# `transformer-dates` on one date, last layer, mean over its 4 heads:

# %%
lecture.three_attentions(transformer, "30 June 2001")

# %% [markdown] slideshow={"slide_type": "notes"}
# Left: the encoder's tokens attend to each other (no mask: every token sees the whole date).
# Middle: the decoder's masked self-attention, the causal triangle: output t sees outputs
# 1..t only. Right: cross-attention, each output character looks up the source: the year
# digits at the year, the month digits at the month name.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Every head of the cross-attention
#
# Cross-attention of every layer and head of `transformer-dates` (2 layers x 4 heads):

# %%
lecture.head_grid(transformer, "Saturday, 30 June 2001")

# %% [markdown] slideshow={"slide_type": "notes"}
# Heads specialise: some track the year, some the month, some the day. Type another date in the
# DecodeStepper (model chooser: transformer) to see one head at a time. In the
# ScaledDotExplorer the "trained Transformer" mode shows the real Q and K.

# %% [markdown] slideshow={"slide_type": "slide"}
# ### Results with the Transformer
#
# <img src="../pics/transformer_results.png" width="64%">
#
# Table 2 of the arXiv version ([arXiv:1706.03762](https://arxiv.org/abs/1706.03762)). **EN-DE:** the base
# model (27.3) beats every earlier model, ensembles included. **EN-FR:** the base model (38.1)
# does not; the big model (41.8) beats every earlier single model, at less than 1/4 of the
# training cost of the previous state of the art (the paper's ratio).

# %% [markdown] slideshow={"slide_type": "notes"}
# Table 2 of the paper, redrawn. Versions: the arXiv paper (its revised versions) reports 41.8 BLEU for
# the big model on EN-FR; the NIPS 2017 proceedings version reports 41.0. Both are above every
# earlier single model (best: MoE, 40.56); 41.0 is below the GNMT+RL and ConvS2S ensembles
# (41.16, 41.29), and the paper itself claims only the single-model record. On EN-DE the base
# model's 27.3 is above the best ensemble (ConvS2S, 26.36) at 3.3e18 FLOPs against that
# ensemble's 7.7e19 ("a fraction of the training cost of any of the competitive models"); the
# big model reaches 28.4. Our date models below are not comparable to these: a toy task.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Our own results table: dates to ISO

# %%
lecture.model_table()

# %% [markdown] slideshow={"slide_type": "notes"}
# Same task, same data, the three designs of this lecture, read from each checkpoint's card
# (what our training script measured). With attention, RNNSearch reaches 99.95% exact match
# after 100 steps; the fixed-vector RNNEncDec stops at its 200-step limit at about 91%. The
# Transformer needs more parameters and more steps (800) at this size. The seconds are
# wall-clock times of the training runs on a shared machine: compare the steps.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## References
#
# * I. Sutskever, O. Vinyals, Q. V. Le. [Sequence to sequence learning with neural networks](https://papers.nips.cc/paper/5346-sequence-to-sequence-learning-with-neural-networks.pdf). NIPS 2014.
# * D. Bahdanau, K. Cho, Y. Bengio. [Neural machine translation by jointly learning to align and translate](https://arxiv.org/pdf/1409.0473.pdf). 2014.
# * A. Vaswani et al. [Attention is all you need](https://arxiv.org/abs/1706.03762). arXiv:1706.03762 (the NIPS 2017 version reports 41.0 on EN-FR).
# * M.-T. Luong, H. Pham, C. D. Manning. [Effective approaches to attention-based neural machine translation](https://arxiv.org/pdf/1508.04025.pdf). EMNLP 2015.
# * D. Rao & B. McMahan, *Natural Language Processing with PyTorch*, chapter 8.
# * [Attention? Attention!](https://lilianweng.github.io/lil-log/2018/06/24/attention-attention.html), a blog post by Lilian Weng.
# * [The Annotated Transformer](http://nlp.seas.harvard.edu/2018/04/03/attention.html).
# * [Video: the Transformer presented by one of its authors](https://www.youtube.com/watch?v=rBCqOTEfxvg).
#
# Exercises: `notebooks/07_attention_exercises.ipynb`.

# %% [markdown] slideshow={"slide_type": "notes"}
# The first four are the papers behind the slides; the rest are where to read next. The
# exercises notebook has students write each score, the masked softmax, one decoding step and
# scaled dot-product attention, and run their function inside the trained models.
