"""hmmcascade: HMMER3's filter cascade (MSV -> Viterbi -> Forward) as OpenCL kernels.

Scores equal HMMER's: the MSV filter bit for bit, the Viterbi filter word for
word, the Forward filter to float precision.  See :func:`hmmcascade.cascade.search`.
"""

__version__ = "0.1.0"
