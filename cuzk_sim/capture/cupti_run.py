"""placeholder"""


def run_captured(cmd):
    raise NotImplementedError
