"""Training code that imports a module that is not installed."""
import torch  # noqa: F401


def main():
    import gpuctl_no_such_augmentations  # noqa: F401


if __name__ == "__main__":
    main()
