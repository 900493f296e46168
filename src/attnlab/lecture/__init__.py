"""The deck's helpers: what a slide calls, each returning something that shows itself.

* :mod:`~attnlab.lecture.display`: :class:`Table`, :class:`Source`, :class:`Picture`,
  :class:`Message` and :func:`show_source` (the real source on a slide);
* :mod:`~attnlab.lecture.tables`: tables read from the model cards and the stored
  real-language results;
* :mod:`~attnlab.lecture.reversal`: the digit-reversal task live, and where alignment breaks;
* :mod:`~attnlab.lecture.transformer_demos`: the Transformer's parts on a trained model;
* :mod:`~attnlab.lecture.language_pictures`: stored test-split examples, decoded and drawn;
* :mod:`~attnlab.lecture.measurements`: timings, sequential steps, FLOPs and the head study,
  the slow ones cached in ``results/deck.json``.
"""

from attnlab.lecture.display import (
    CELL_PX,
    MAX_WIDTH_PX,
    OUTPUT_AREA_PX,
    Marked,
    Message,
    Picture,
    Source,
    Table,
    show_source,
)
from attnlab.lecture.language_pictures import (
    PREPARED_PHRASES,
    SUBWORD_PHRASES,
    alpha_and_occlusion,
    drawn_phrases,
    held_out_example,
    self_attention_heads,
    subword_table,
    word_order_models,
)
from attnlab.lecture.measurements import (
    MEASUREMENTS_FILE,
    equal_compute,
    flops_per_step,
    graph_depth,
    head_study,
    heads_compared,
    heads_measured,
    measure,
    plot_timings,
    read_measurements,
    sequential_steps,
    time_rnn_vs_attention,
    write_measurements,
)
from attnlab.lecture.qkv_pictures import query_row, query_row_picture
from attnlab.lecture.reversal import alignment_failure, reverse_demo
from attnlab.lecture.search_pictures import BEAM_PHRASE, beam_search_picture, bpe_merges_picture
from attnlab.lecture.tables import (
    head_roles_table,
    language_table,
    model_card,
    model_table,
    rare_words_counts,
    vaswani_table,
)
from attnlab.lecture.transformer_demos import (
    causal_demo,
    head_grid,
    positional_encoding_picture,
    teacher_forcing,
    three_attentions,
)

__all__ = [
    "CELL_PX",
    "MAX_WIDTH_PX",
    "OUTPUT_AREA_PX",
    "MEASUREMENTS_FILE",
    "Marked",
    "Message",
    "Picture",
    "Source",
    "Table",
    "alignment_failure",
    "BEAM_PHRASE",
    "PREPARED_PHRASES",
    "drawn_phrases",
    "beam_search_picture",
    "bpe_merges_picture",
    "query_row",
    "query_row_picture",
    "SUBWORD_PHRASES",
    "alpha_and_occlusion",
    "causal_demo",
    "equal_compute",
    "flops_per_step",
    "graph_depth",
    "head_grid",
    "head_roles_table",
    "head_study",
    "heads_compared",
    "heads_measured",
    "held_out_example",
    "word_order_models",
    "language_table",
    "vaswani_table",
    "measure",
    "read_measurements",
    "model_card",
    "model_table",
    "plot_timings",
    "positional_encoding_picture",
    "rare_words_counts",
    "reverse_demo",
    "self_attention_heads",
    "subword_table",
    "sequential_steps",
    "show_source",
    "teacher_forcing",
    "three_attentions",
    "time_rnn_vs_attention",
    "write_measurements",
]
