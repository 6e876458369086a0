"""One verifier per problem kind, behind one interface (`dispatch.verify_spec`): multi-party
problems on bits, more than two symbols, count queries, protocol and mechanism audits.
Each builds its LPs, solves them through `lp/`, compares, and settles exactly what floats
cannot decide.
"""
