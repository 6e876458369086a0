'''Commented problem-file templates (`dpverify new`): each loads and verifies as it is.

A template is a starting point that documents every key in place; spec.md is the
contract it follows.
'''

from __future__ import annotations

from pathlib import Path

from dpverify.defaults import TEMPLATE_KINDS
from dpverify.errors import InputError
from dpverify.spec.documents import toml_value

__all__ = ["KINDS", "template", "write_template"]

KINDS = TEMPLATE_KINDS

MULTIPARTY = '''# A multi-party problem (Kairouz, Oh, Viswanath, Theorem 3.1): k parties each hold
# one private bit; is randomized response optimal for what the agents below want to
# compute?
# Verify it with:  dpverify verify @FILE@

[problem]
name = @NAME@
description = "Three parties; the observer wants the XOR, party 1 the majority."
parties = 3                        # k >= 1
epsilon = 1.0                      # every party's privacy level, or a list of k: [0.5, 1, 2]
# lambda = "3/2"                   # instead of epsilon: lambda = e^epsilon >= 1, exact "p/q"
accuracy = ["average", "worst"]    # optional: "average", "worst", or both (the default)

[observer]                         # the central observer (optional)
function = "xor"                   # xor, and, or, majority, sum, threshold:t, bit:i,
                                   # { expr = "1 if sum(x) > k/2 else 0" } over x1..xk, x, k,
                                   # or { table = [f(000), f(001), ..., f(111)] }
gain = "indicator"                 # indicator, -abs, -square, { expr = "..." } over f and y,
                                   # or { matrix = [[...]] }

[[party]]                          # zero or more parties who also want a function
index = 1                          # 1-based
function = "majority"
# outputs = [0, 1]                 # optional: the decision alphabet

# Regression values for `dpverify check` (fill them in with `dpverify check @FILE@ --update`):
# [expect.observer]
# average = ...
# [expect.party.1]
# worst = ...
'''

COUNT = '''# A count query (Gupte, Sundararajan, PODS 2010): is the geometric mechanism, followed by
# the consumer's best post-processing, as good as the best alpha-DP mechanism?
# Verify it with:  dpverify verify @FILE@

[problem]
name = @NAME@
description = "Absolute error on a count in 0..10 at alpha = 1/2."
kind = "count"
n = 10                             # answers 0..n
alpha = "1/2"                      # alpha = e^-epsilon in [0, 1], exact "p/q" allowed
# epsilon = 0.7                    # instead of alpha

[consumer]
loss = "abs"                       # abs, square, indicator, { expr = "abs(i - r) / n" } over
                                   # i, r and n, or { matrix = [[...], ...] } (n+1) x (n+1)
# side_information = [2, 8]        # optional: the count is known to lie in [2, 8],
                                   # or { set = [0, 3, 7] }; default 0..n
model = "minimax"                  # or "bayes", with prior = [n+1 non-negative weights]

# A regression value for `dpverify check` (fill it in with `dpverify check @FILE@ --update`):
# [expect.consumer]
# minimax = ...
'''


def template(kind: str, name: str, file: str | None = None) -> str:
    """The commented template of a `kind` problem (`multiparty` or `count`) named `name`."""
    texts = {"multiparty": MULTIPARTY, "count": COUNT}
    if kind not in texts:
        raise InputError(f"{kind!r}: unknown kind of problem; allowed: {', '.join(KINDS)}")
    return texts[kind].replace("@NAME@", toml_value(name)).replace("@FILE@",
                                                                    file or f"{name}.toml")


def write_template(kind: str, name: str, folder: str | Path = ".") -> Path:
    """Write the template to `folder/NAME.toml` (NAME may end in .toml) and return its
    path. Never overwrites a file: InputError (exit 2) when it exists."""
    stem = name.removesuffix(".toml")
    if not stem or Path(stem).name != stem:
        raise InputError(f"{name!r}: give a plain file name (no directory), e.g. my-problem")
    path = Path(folder) / f"{stem}.toml"
    text = template(kind, stem, str(path))
    try:
        with open(path, "x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise InputError(f"{path}: already exists; choose another name (nothing was "
                         "written)") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror}") from None
    return path
