"""The deck's helpers: what a slide calls, each returning something that shows itself."""

from attnlab.lecture.demos import *  # noqa: F403
