"""The funnel's checks, one module per family (as kube-scheduler groups its plugins).

Each module holds its checks, their explanations and the reasons they give; the order they
run in is data in ``triage.classify.pipeline``, next to the cause vocabulary.
"""
