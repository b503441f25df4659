"""Native code reading address 0: the process dies of SIGSEGV."""
import ctypes

import torch  # noqa: F401


def main():
    print("reading through a null pointer", flush=True)
    ctypes.string_at(0)


if __name__ == "__main__":
    main()
