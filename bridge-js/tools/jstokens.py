"""A JavaScript tokenizer and whitespace/comment minifier for the shim's build (standard library only).

The build needs to drop comments and whitespace from a language whose lexical grammar depends on
its syntax: `/` starts a regular expression or is a division depending on what came before, a
template literal's `${ ... }` holds arbitrary code (more templates included), and a line break can
end a statement (automatic semicolon insertion). So the tokenizer tracks what it needs of the
syntax (the previous significant token, an open-bracket stack that remembers what opened each
parenthesis and brace, and template nesting), and the minifier only ever *removes* whitespace
between tokens that it copies verbatim, keeping a line break wherever a semicolon could have been
inserted there. `verify_minified()` re-tokenizes the output and checks that the token stream is the
same, so a join that would fuse two tokens (`a - -b`, `/re/ in`) fails the build instead of
shipping.
"""

from dataclasses import dataclass

# Token kinds.
WORD = "word"          # identifiers, keywords, private names (#x)
NUMBER = "number"
STRING = "string"
TEMPLATE = "template"  # a whole template without substitutions, or its head, middle or tail
REGEX = "regex"
PUNCT = "punct"

PUNCTUATORS = sorted(
    """>>>= ... === !== **= <<= >>= >>> &&= ||= ??= => == != <= >= && || ?? ?. ++ -- += -= *= /= %= &=
    |= ^= << >> ** { } ( ) [ ] ; , < > + - * / % & | ^ ! ~ ? : = . @""".split(),
    key=len,
    reverse=True,
)

# After these words an expression starts, so `/` begins a regular expression.
KEYWORDS_BEFORE_EXPRESSION = {
    "return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do",
    "else", "yield", "await", "extends",
}
# A parenthesis after these is a statement's head: a `/` after its `)` starts a regular expression.
STATEMENT_HEADS = {"if", "while", "for", "with"}
# A `{` after these opens a block (so a `/` after its `}` starts a regular expression); after any
# other punctuator (or an expression keyword) it opens an object literal.
BLOCK_AFTER_PUNCT = {")", ";", "{", "}", "=>"}
BLOCK_AFTER_WORDS = {"else", "do", "try", "finally", "static"}

LINE_TERMINATORS = "\n\r\u2028\u2029"


class TokenizeError(ValueError):
    """Source the tokenizer cannot read: an unterminated string, comment, template or regex."""


@dataclass
class Token:
    kind: str
    text: str
    offset: int        # in the source string
    line: int          # 0-based
    column: int        # 0-based, in UTF-16 code units (what source maps count)
    newline_before: bool = False  # a line terminator (or a comment holding one) separates it from the previous token

    def __repr__(self):
        return f"{self.kind}:{self.text!r}@{self.line + 1}:{self.column + 1}"


def _is_word_start(ch):
    return ch.isalpha() or ch in "_$\\" or ord(ch) > 0x7F


def _is_word_part(ch):
    return ch.isalnum() or ch in "_$\\\u200c\u200d" or ord(ch) > 0x7F


def utf16_length(text):
    return len(text.encode("utf-16-le")) // 2


class _Lexer:
    def __init__(self, source, name):
        self.source = source
        self.name = name
        self.pos = 0
        self.line = 0
        self.line_start = 0  # offset of the current line's first character
        self.tokens = []
        # One entry per open bracket: ("(", is_statement_head), ("{", is_block), ("${", None), ("[", None).
        self.stack = []
        # What the last `)` or `}` closed, for the regex decision after it.
        self.closed = None

    def fail(self, message, offset=None):
        offset = self.pos if offset is None else offset
        line = self.source.count("\n", 0, offset) + 1
        raise TokenizeError(f"{self.name}:{line}: {message}")

    def column_of(self, offset):
        return utf16_length(self.source[self.line_start:offset])

    def advance_over(self, start, end):
        """Moves to `end`, counting the line terminators between `start` and `end`."""
        index = start
        source = self.source
        while index < end:
            ch = source[index]
            if ch in LINE_TERMINATORS:
                if ch == "\r" and index + 1 < end and source[index + 1] == "\n":
                    index += 1
                self.line += 1
                self.line_start = index + 1
            index += 1
        self.pos = end

    def emit(self, kind, start, end, newline_before):
        token = Token(kind, self.source[start:end], start, self.line, self.column_of(start), newline_before)
        self.tokens.append(token)
        self.advance_over(start, end)
        return token

    # -- the regex/division decision

    def regex_allowed(self):
        if not self.tokens:
            return True
        previous = self.tokens[-1]
        if previous.kind in (NUMBER, STRING, REGEX):
            return False
        if previous.kind == TEMPLATE:
            # A whole template or a tail ends an expression; a head or middle is followed by one.
            return previous.text.endswith("${")
        if previous.kind == WORD:
            return previous.text in KEYWORDS_BEFORE_EXPRESSION and not self.is_property_name(len(self.tokens) - 1)
        text = previous.text
        if text == ")":
            return self.closed == ("(", True)
        if text == "}":
            return self.closed == ("{", True)
        return text not in ("]", "++", "--")

    def is_property_name(self, index):
        """`x.return` or `x?.in`: a keyword after a dot is a property name, not a keyword."""
        return index > 0 and self.tokens[index - 1].text in (".", "?.")

    def brace_is_block(self):
        """Whether a `{` opens a block (or a class body) rather than an object literal."""
        if not self.tokens:
            return True
        previous = self.tokens[-1]
        if previous.kind == PUNCT:
            return previous.text in BLOCK_AFTER_PUNCT
        if previous.kind == WORD and not self.is_property_name(len(self.tokens) - 1):
            # `else {`, `try {`, `class A {`, `extends Base {`; but `return {` is an object.
            return previous.text in BLOCK_AFTER_WORDS or previous.text not in KEYWORDS_BEFORE_EXPRESSION
        return False

    # -- scanning

    def run(self):
        source = self.source
        length = len(source)
        newline_before = False
        while self.pos < length:
            start = self.pos
            ch = source[start]
            if ch in LINE_TERMINATORS:
                newline_before = True
                self.advance_over(start, start + 1)
                continue
            if ch in " \t\v\f\u00a0\ufeff" or ch.isspace():
                self.advance_over(start, start + 1)
                continue
            if source.startswith("//", start):
                end = start + 2
                while end < length and source[end] not in LINE_TERMINATORS:
                    end += 1
                self.advance_over(start, end)
                continue
            if source.startswith("/*", start):
                end = source.find("*/", start + 2)
                if end < 0:
                    self.fail("unterminated comment", start)
                comment = source[start:end + 2]
                if any(terminator in comment for terminator in LINE_TERMINATORS):
                    newline_before = True
                self.advance_over(start, end + 2)
                continue
            self.scan_token(start, newline_before)
            newline_before = False
        if self.stack:
            self.fail(f"unclosed {self.stack[-1][0]!r} at the end of the file")
        return self.tokens

    def scan_token(self, start, newline_before):
        source = self.source
        ch = source[start]
        if ch == "#" and start + 1 < len(source) and _is_word_start(source[start + 1]):
            end = start + 1
            while end < len(source) and _is_word_part(source[end]):
                end += 1
            self.emit(WORD, start, end, newline_before)
            return
        if _is_word_start(ch):
            end = start
            while end < len(source) and _is_word_part(source[end]):
                end += 1
            self.emit(WORD, start, end, newline_before)
            return
        if ch.isdigit() or (ch == "." and start + 1 < len(source) and source[start + 1].isdigit()):
            self.emit(NUMBER, start, self.number_end(start), newline_before)
            return
        if ch in "'\"":
            self.emit(STRING, start, self.string_end(start), newline_before)
            return
        if ch == "`":
            self.scan_template(start + 1, start, newline_before)
            return
        if ch == "}" and self.stack and self.stack[-1][0] == "${":
            self.stack.pop()
            self.scan_template(start + 1, start, newline_before)
            return
        if ch == "/" and self.regex_allowed():
            self.emit(REGEX, start, self.regex_end(start), newline_before)
            return
        for punctuator in PUNCTUATORS:
            if source.startswith(punctuator, start):
                # `a?.5:b` is a conditional, not optional chaining.
                if punctuator == "?." and start + 2 < len(source) and source[start + 2].isdigit():
                    continue
                self.punctuator(punctuator, start, newline_before)
                return
        self.fail(f"unexpected character {ch!r}", start)

    def punctuator(self, text, start, newline_before):
        if text == "(":
            previous = self.tokens[-1] if self.tokens else None
            head = bool(previous and previous.kind == WORD and previous.text in STATEMENT_HEADS and not self.is_property_name(len(self.tokens) - 1))
            self.stack.append(("(", head))
        elif text == "{":
            self.stack.append(("{", self.brace_is_block()))
        elif text == "[":
            self.stack.append(("[", None))
        elif text in ")]}":
            opener = {")": "(", "]": "[", "}": "{"}[text]
            if not self.stack or self.stack[-1][0] != opener:
                self.fail(f"unbalanced {text!r}", start)
            self.closed = self.stack.pop()
        self.emit(PUNCT, start, start + len(text), newline_before)

    def number_end(self, start):
        source = self.source
        end = start
        if source[start] == "0" and start + 1 < len(source) and source[start + 1] in "xXoObB":
            end = start + 2
            while end < len(source) and (source[end].isalnum() or source[end] == "_"):
                end += 1
            return end
        while end < len(source) and (source[end].isdigit() or source[end] == "_"):
            end += 1
        if end < len(source) and source[end] == ".":
            end += 1
            while end < len(source) and (source[end].isdigit() or source[end] == "_"):
                end += 1
        if end < len(source) and source[end] in "eE":
            probe = end + 1
            if probe < len(source) and source[probe] in "+-":
                probe += 1
            if probe < len(source) and source[probe].isdigit():
                end = probe
                while end < len(source) and (source[end].isdigit() or source[end] == "_"):
                    end += 1
        if end < len(source) and source[end] == "n":
            end += 1
        if end < len(source) and _is_word_part(source[end]):
            self.fail("an identifier starts right after a number", end)
        return end

    def string_end(self, start):
        source = self.source
        quote = source[start]
        end = start + 1
        while end < len(source):
            ch = source[end]
            if ch == "\\":
                end += 2
                continue
            if ch == quote:
                return end + 1
            if ch in "\n\r":
                break
            end += 1
        self.fail("unterminated string", start)

    def scan_template(self, body_start, token_start, newline_before):
        """From just after a backtick or a substitution's closing brace to the next backtick or `${`."""
        source = self.source
        end = body_start
        while end < len(source):
            ch = source[end]
            if ch == "\\":
                end += 2
                continue
            if ch == "`":
                self.emit(TEMPLATE, token_start, end + 1, newline_before)
                return
            if ch == "$" and source.startswith("${", end):
                self.emit(TEMPLATE, token_start, end + 2, newline_before)
                self.stack.append(("${", None))
                return
            end += 1
        self.fail("unterminated template literal", token_start)

    def regex_end(self, start):
        source = self.source
        end = start + 1
        in_class = False
        while end < len(source):
            ch = source[end]
            if ch in "\n\r\u2028\u2029":
                break
            if ch == "\\":
                end += 2
                continue
            if ch == "[":
                in_class = True
            elif ch == "]":
                in_class = False
            elif ch == "/" and not in_class:
                end += 1
                while end < len(source) and _is_word_part(source[end]):
                    end += 1
                return end
            end += 1
        self.fail("unterminated regular expression", start)


def tokenize(source, name="<source>"):
    """The tokens of `source`, without whitespace and comments."""
    return _Lexer(source, name).run()


# ------------------------------------------------------------------------------------ minifying

# A line break after one of these may have ended a statement...
def _can_end_statement(token):
    if token.kind in (WORD, NUMBER, STRING, REGEX):
        return True
    if token.kind == TEMPLATE:
        return token.text.endswith("`") and (token.text.startswith("`") or token.text.startswith("}"))
    return token.text in (")", "]", "}", "++", "--")


# ...unless the next token can only continue an expression, so no semicolon can go between them.
_CONTINUATIONS = set(PUNCTUATORS) - {"(", "[", "{", "+", "-", "++", "--", "!", "~", "...", "@", "<", "/"} | {"<"}


def _continues_expression(token):
    return token.kind == PUNCT and token.text in _CONTINUATIONS


def separator(previous, token):
    """What must stay between two tokens: a line break (possible semicolon), a space, or nothing."""
    if previous is None:
        return ""
    if token.newline_before and _can_end_statement(previous) and not _continues_expression(token):
        return "\n"
    a, b = previous.text, token.text
    if previous.kind in (WORD, NUMBER) and (token.kind in (WORD, NUMBER) or b[0] == "#"):
        return " "
    if previous.kind == NUMBER and b[0] == "." and a.replace("_", "").isdigit():
        return " "  # `1 .toString()`: `1.` would be the number
    if previous.kind == REGEX and (token.kind in (WORD, NUMBER) or b[0] == "#"):
        return " "  # flags would swallow the word
    if previous.kind == PUNCT:
        if (a[-1] == "+" and b[0] == "+") or (a[-1] == "-" and b[0] == "-"):
            return " "
        if a[-1] == "/" and b[0] in "/*":
            return " "  # would start a comment
        if a == "<" and b[0] == "!":
            return " "  # `<!--` is a comment in classic scripts
        if a[-1] == "-" and b[0] == ">":
            return " "  # `-->` too, at the start of a line
    return ""


def minify_tokens(tokens):
    """Yields (text_before, token) pairs: the separator to write and then the token's own text."""
    previous = None
    for token in tokens:
        yield separator(previous, token), token
        previous = token


def minify(source, name="<source>"):
    """`source` without comments and insignificant whitespace."""
    return "".join(before + token.text for before, token in minify_tokens(tokenize(source, name)))


def verify_minified(original_tokens, minified, name="<minified>"):
    """Raises if `minified` does not tokenize to the same tokens (texts and kinds) as the original."""
    again = tokenize(minified, name)
    if len(again) != len(original_tokens):
        raise TokenizeError(f"{name}: {len(again)} tokens after minifying, {len(original_tokens)} before")
    for before, after in zip(original_tokens, again):
        if before.kind != after.kind or before.text != after.text:
            raise TokenizeError(f"{name}: {before!r} became {after!r}")
