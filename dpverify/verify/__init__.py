"""One verifier per problem kind: build the LPs, solve them, compare, certify."""
