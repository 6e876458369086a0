"""One verifier per problem kind: build the LPs, solve them, compare, certify.

The package is also callable: `dpverify.verify(problem, **options)` is the API's verify
(`dpverify.api.verify`; see dpverify/_callable.py).
"""

from dpverify._callable import make_callable

make_callable(__name__)
