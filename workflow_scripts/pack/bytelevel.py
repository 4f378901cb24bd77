"""Word starts of byte-level BPE read from the token ids alone, equal to the tokenizer's word ids.

The byte-level pre-tokenizer (GPT-2/RoBERTa) cuts text with the pattern
``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`` and each piece is a
word; BPE never merges across pieces. So two adjacent tokens share a piece iff the pattern joins the
last character of the first to the first character of the second: same class (letter, number,
other), or a single space before content. Per-vocabulary tables give those edge classes (probed
with the pre-tokenizer itself); the stream adds the context the pair lacks: a complete contraction
(``'s`` ...) ends its piece, a whitespace character alone starts one iff content follows it, and a
character whose bytes BPE left in several tokens is read from its neighbours. A lone ``'`` before a
letter a contraction could go on with, after a letter or at a start, stays undecided (a vocabulary
with ``'s`` merged never shows it): those documents are encoded again with word ids.
"""

from __future__ import annotations

import numpy as np

# character classes of the pattern, plus the edge cases of byte-level tokens
LETTER, NUMBER, OTHER, SPACE, WHITESPACE = 0, 1, 2, 3, 4
CONTINUES = 5  # the token starts inside a character begun by the previous token
UNKNOWN = 6  # the edge character is not complete within the token
ADDED = 7  # an added token, matched in the raw text before pre-tokenisation: a piece of its own
SPACES = (SPACE, WHITESPACE)
CONTRACTIONS = ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d")
# per class: whitespace; content (letter, number, other); continues the piece of a following "'"
_SPACE = np.isin(np.arange(8), (SPACE, WHITESPACE))
_CONTENT = np.isin(np.arange(8), (LETTER, NUMBER, OTHER))
_OPEN_QUOTE = np.isin(np.arange(8), (OTHER, SPACE))


def byte_alphabet() -> dict[int, str]:
    """GPT-2's byte-level alphabet: printable Latin-1 bytes stand for themselves, the others for 256 + n."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = {b: chr(b) for b in printable}
    chars.update((b, chr(256 + n)) for n, b in enumerate(b for b in range(256) if b not in chars))
    return chars


def applies(backend) -> bool:
    """A BPE model behind the byte-level pre-tokenizer with its standard pattern."""
    pre = backend.pre_tokenizer
    return type(backend.model).__name__ == "BPE" and type(pre).__name__ == "ByteLevel" and pre.use_regex


def _utf8_length(lead: int) -> int:
    """Bytes of the UTF-8 character a byte leads (0: not a valid lead byte)."""
    for size, (low, high) in enumerate(((0x00, 0x80), (0xC2, 0xE0), (0xE0, 0xF0), (0xF0, 0xF5)), start=1):
        if low <= lead < high:
            return size
    return 0


class Classifier:
    """Classes of characters as the tokenizer's own pre-tokenizer sees them (probed once per character)."""

    def __init__(self) -> None:
        from tokenizers import pre_tokenizers

        self.pre, self.known = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True), {" ": SPACE}
        self.ascii = [self.char(chr(b)) for b in range(128)]

    def char(self, char: str) -> int:
        if char not in self.known:
            # a character joins the piece of a letter, a digit or a punctuation mark iff it is of that class
            joined = [len(self.pre.pre_tokenize_str(probe + char)) == 1 for probe in ("a", "0", "!")]
            self.known[char] = joined.index(True) if any(joined) else WHITESPACE
        return self.known[char]

    def first(self, raw: bytes) -> int:
        """Class of the character ``raw`` starts with."""
        if raw[0] < 0x80:
            return self.ascii[raw[0]]
        if raw[0] < 0xC0:
            return CONTINUES
        size = _utf8_length(raw[0])
        return self._decoded(raw[:size]) if 0 < size <= len(raw) else UNKNOWN

    def last(self, raw: bytes) -> int:
        """Class of the character ``raw`` ends with."""
        if raw[-1] < 0x80:
            return self.ascii[raw[-1]]
        lead = next((i for i in range(len(raw) - 1, max(len(raw) - 5, -1), -1) if not 0x80 <= raw[i] < 0xC0), None)
        if lead is None or _utf8_length(raw[lead]) != len(raw) - lead:
            return UNKNOWN
        return self._decoded(raw[lead:])

    def _decoded(self, raw: bytes) -> int:
        try:
            return self.char(raw.decode())
        except UnicodeDecodeError:  # an overlong or surrogate sequence: no character
            return UNKNOWN


class ByteLevelStarts:
    """Per-vocabulary tables and the vectorised piece boundaries of a token stream."""

    def __init__(self, backend) -> None:
        self.classify = classify = Classifier()
        # byte-level characters -> the bytes they stand for; any other character makes a token foreign
        to_bytes = {ord(c): chr(b) for b, c in byte_alphabet().items()}
        to_bytes.update((c, "\uffff") for c in range(256) if c not in to_bytes)
        vocab = backend.get_vocab(with_added_tokens=True)
        added = set(backend.get_added_tokens_decoder())
        size = max(vocab.values()) + 1
        first, last = [UNKNOWN] * size, [UNKNOWN] * size
        self.raw = [b""] * size
        # leading whitespace: 0 none, 1 one character then more, 2 two or more, 3 one character alone, -1 unknown
        spaces = [0] * size
        for token, i in vocab.items():
            try:
                raw = token.translate(to_bytes).encode("latin-1")
            except UnicodeEncodeError:
                raw = b""
            if i in added or not raw:
                first[i] = last[i] = ADDED
                continue
            self.raw[i] = raw
            first[i], last[i] = classify.first(raw), classify.last(raw)
            if first[i] in SPACES:
                rest = raw[_utf8_length(raw[0]) :]
                second = classify.first(rest) if rest else None
                spaces[i] = 3 if second is None else -1 if second == UNKNOWN else 2 if second in SPACES else 1
        self.first, self.last = np.array(first, dtype=np.int8), np.array(last, dtype=np.int8)
        self.spaces = np.array(spaces, dtype=np.int8)
        tokens = [""] * size
        for token, i in vocab.items():
            tokens[i] = token
        self.ends_piece = np.array([t in CONTRACTIONS for t in tokens])  # a complete contraction ends its piece
        # a contraction may start at a lone "'" (one joined to other characters is punctuation)
        self.lone_quote = np.array([t == "'" for t in tokens])
        self.partial = np.array([t in ("'r", "'v", "'l") for t in tokens])  # a longer contraction goes on
        # a token a contraction split after its "'" could go on with
        self.may_continue = np.array([t[:1] in ("s", "t", "m", "d", "r", "v", "l") for t in tokens])

    def boundaries(self, ids: np.ndarray, doc_start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(starts a piece, undecided) per token of a stream; ``doc_start`` marks each document's first token."""
        first, last = self.first[ids], self.last[ids]
        # a character whose bytes BPE left in several tokens: read it from the neighbouring tokens
        for k in np.nonzero(first == UNKNOWN)[0]:
            first[k] = self.classify.first(b"".join(self.raw[i] for i in ids[k : k + 4]))
        for k in np.nonzero(last == UNKNOWN)[0]:
            last[k] = self.classify.last(b"".join(self.raw[i] for i in ids[max(k - 3, 0) : k + 1]))
        a_last, b_first = last[:-1], first[1:]
        a, b = ids[:-1], ids[1:]
        added = (a_last == ADDED) | (b_first == ADDED)
        a_space, b_space = _SPACE[a_last], _SPACE[b_first]
        spaces = self.spaces[b]
        # a lone whitespace character starts a piece iff a non-space character follows it in its text
        nxt = np.full(len(b), ADDED, dtype=first.dtype)
        nxt[:-1] = np.where(doc_start[2:], ADDED, first[2:])
        in_run = (spaces == 1) | ((spaces == 3) & _CONTENT[nxt])
        cut = np.select(
            [added, b_first == CONTINUES, self.ends_piece[a], a_space & b_space, a_space, b_space],
            [True, False, True, in_run, a_last == WHITESPACE, True],
            default=a_last != b_first,
        )
        # the class before each pair's first token (ADDED at a document's start): after punctuation or a
        # space a "'" continues that piece, elsewhere it may open a contraction
        before_a = np.full(len(b), ADDED, dtype=first.dtype)
        before_a[1:] = np.where(doc_start[1:-1], ADDED, last[:-2])
        undecided = ~added & (
            (b_first == UNKNOWN)
            | ((a_last == UNKNOWN) & (b_first != CONTINUES))
            | (self.lone_quote[a] & self.may_continue[b] & ~_OPEN_QUOTE[before_a])
            | self.partial[a]
            | (a_space & b_space & ((spaces == -1) | ((spaces == 3) & (nxt == UNKNOWN))))
        )
        starts = np.ones(len(ids), dtype=bool)
        starts[1:] = cut | doc_start[1:]
        pending = np.zeros(len(ids), dtype=bool)
        pending[1:] = undecided & ~doc_start[1:]
        return starts, pending
