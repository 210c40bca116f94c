"""Pipelines as first-class topologies: check the wiring, plan the topics, draw, simulate.

A topology file (``kafka/config.py``) names programs and the topics between them. This package
reads it as a graph — programs are nodes, topics are the edges' carriers — and offers what a user
needs before deploying it: ``check`` (the links fit, with types), ``plan`` (the topics it needs),
``graph`` (a picture) and ``simulate`` (the whole pipeline over a trace in simulated time).
"""
