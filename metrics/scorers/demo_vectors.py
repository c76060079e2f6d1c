"""Demo-quality token vectors trained on a small corpus, saved as a tiny encoder directory.

No small multilingual encoder ships as a pip package (the packaged all-MiniLM-L6-v2 is English),
so an installation without a Chinese or Japanese model would report every neural metric
"unavailable". For the demo, :func:`train_ppmi_svd` learns count-based vectors from the demo
corpus itself: positive pointwise mutual information over a symmetric window, with the context
distribution smoothed by α = 0.75, factorised by a truncated SVD with the singular values weighted
by p = 0.5 (Levy, Goldberg & Dagan 2015, "Improving Distributional Similarity with Lessons Learned
from Word Embeddings", TACL 3, §3 and §6 recommendations). :func:`save_encoder` writes them as the
input embeddings of a BERT whose one layer passes them through, so the one directory serves
every neural metric through the usual loading code: ``word_vectors`` (the input-embedding matrix),
``sentence_model`` (mean pooling) and ``bertscore_model`` (contextless token vectors).

Learned from a few hundred sentences, these vectors are **demo quality**: they show the metrics
working end to end, not figures to publish. The directory is named ``demo-quality-…`` and its
manifest says so, so every signature and the models list carry the label.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import svds

from metrics.scorers.models import ENCODER_SETTINGS, MANIFEST

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def train_ppmi_svd(
    sentences: Sequence[Sequence[str]],
    *,
    dim: int = 64,
    window: int = 2,
    alpha: float = 0.75,
    eig_p: float = 0.5,
) -> tuple[list[str], np.ndarray]:
    """``(vocabulary, vectors)`` of every token of ``sentences`` (rows in vocabulary order),
    by PPMI + SVD (see the module doc); ``dim`` is capped by the vocabulary size."""
    counts = Counter(token for sentence in sentences for token in sentence)
    vocab = sorted(counts)
    if len(vocab) < 3:
        raise ValueError("the corpus needs at least 3 distinct tokens to learn vectors")
    index = {token: i for i, token in enumerate(vocab)}
    rows: list[int] = []
    cols: list[int] = []
    for sentence in sentences:
        ids = [index[token] for token in sentence]
        for offset in range(1, window + 1):
            left, right = ids[:-offset], ids[offset:]
            rows += left + right
            cols += right + left
    n = len(vocab)
    cooc = sparse.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n)).tocsr()
    cooc.sum_duplicates()
    word = np.asarray(cooc.sum(axis=1)).ravel()
    context = np.asarray(cooc.sum(axis=0)).ravel() ** alpha
    coo = cooc.tocoo()
    # PMI(w, c) = log(P(w, c) / (P(w) · P_α(c))) = log(#(w,c) · Σ#(c)^α / (#(w) · #(c)^α)).
    pmi = np.log(coo.data * context.sum() / (word[coo.row] * context[coo.col]))
    keep = pmi > 0
    ppmi = sparse.csr_matrix((pmi[keep], (coo.row[keep], coo.col[keep])), shape=(n, n))
    k = max(1, min(dim, n - 2))
    # A fixed start vector: the same corpus always gives the same vectors (and signatures).
    start = np.full(n, 1.0 / np.sqrt(n))
    u, s, _vt = svds(ppmi, k=k, v0=start)
    order = np.argsort(-s)
    vectors = u[:, order] * (s[order] ** eig_p)
    # An SVD's signs are arbitrary: fix each column's so the largest entry is positive.
    signs = np.sign(vectors[np.abs(vectors).argmax(axis=0), np.arange(vectors.shape[1])])
    signs[signs == 0] = 1.0
    return vocab, (vectors * signs).astype(np.float32)


def save_encoder(
    directory: Path,
    vocab: Sequence[str],
    vectors: np.ndarray,
    *,
    languages: Sequence[str],
    description: str,
) -> Path:
    """Write ``vectors`` as a one-layer BERT that passes them through (word embeddings = the
    vectors, position and segment embeddings zero) plus its tokenizer and a manifest; returns
    ``directory``.

    Each token is in the vocabulary twice, as itself and as a ``##`` continuation, both with its
    vector, so BERT's WordPiece cuts any run of known characters (kana, Latin) into them."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    directory.mkdir(parents=True, exist_ok=True)
    tokens = [t for t in vocab if t not in SPECIAL_TOKENS and not t.isspace()]
    pieces = [*SPECIAL_TOKENS, *tokens, *(f"##{t}" for t in tokens)]
    (directory / "vocab.txt").write_text("\n".join(pieces) + "\n", encoding="utf-8")
    dim = vectors.shape[1]
    config = BertConfig(
        vocab_size=len(pieces),
        hidden_size=dim,
        num_hidden_layers=1,
        num_attention_heads=1,
        intermediate_size=dim,
        max_position_embeddings=512,
    )
    model = BertModel(config)  # with its (unused) pooler: AutoModel loads one
    rows = {token: i for i, token in enumerate(vocab)}
    table = np.zeros((len(pieces), dim), dtype=np.float32)
    table[len(SPECIAL_TOKENS) : len(SPECIAL_TOKENS) + len(tokens)] = vectors[
        [rows[t] for t in tokens]
    ]
    table[len(SPECIAL_TOKENS) + len(tokens) :] = vectors[[rows[t] for t in tokens]]
    # Special tokens need a direction of their own: a zero row normalises to NaN. Seeded random
    # rows are nearly orthogonal to the words; [UNK] is the mean word, as OOV words get.
    scale = float(np.linalg.norm(vectors, axis=1).mean())
    special = np.random.default_rng(0).standard_normal((len(SPECIAL_TOKENS), dim))
    table[: len(SPECIAL_TOKENS)] = scale * special / np.linalg.norm(special, axis=1)[:, None]
    table[SPECIAL_TOKENS.index("[UNK]")] = vectors.mean(axis=0)
    # One layer that passes its input through: attention and feed-forward outputs are zero, so
    # the residual keeps the (normalised) vectors; every LayerNorm is the plain normalisation.
    # Loading code and BERTScore expect a layer to truncate to (with none, transformers'
    # encoder fails). By parameter name: the same for every BERT in transformers.
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name == "embeddings.word_embeddings.weight":
                parameter.copy_(torch.from_numpy(table))
            elif "LayerNorm.weight" in name:
                parameter.fill_(1.0)
            elif (
                "LayerNorm.bias" in name
                or name.startswith(("embeddings.position_", "embeddings.token_type_"))
                or name.endswith(("attention.output.dense.weight", "attention.output.dense.bias"))
                or (".output.dense." in name and ".attention." not in name)
            ):
                parameter.zero_()
    model.save_pretrained(directory)
    BertTokenizer(
        str(directory / "vocab.txt"), do_lower_case=False, tokenize_chinese_chars=True
    ).save_pretrained(directory)
    manifest = {
        "quality": "demo",
        "languages": list(languages),
        "settings": list(ENCODER_SETTINGS),
        "description": description,
        "method": "PPMI (window 2, alpha 0.75) + SVD (p 0.5), Levy et al. 2015",
        "dimensions": int(dim),
        "vocabulary": len(tokens),
    }
    (directory / MANIFEST).write_text(
        json.dumps(manifest, ensure_ascii=False, indent=2), encoding="utf-8"
    )
    return directory
