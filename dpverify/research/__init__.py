"""Research tools beyond the theorems: the falsification search and the survey of functions.
"""
