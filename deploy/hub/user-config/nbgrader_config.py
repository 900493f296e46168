"""nbgrader for every user of the course hub (on JUPYTER_CONFIG_PATH, set by the hub).

The course and the exchange come from the hub (ATTNLAB_COURSE_ID, ATTNLAB_EXCHANGE); an
instructor's course folder is ~/attention-course, which the hub prepares on the first start.
"""

import os

c = get_config()  # noqa: F821  (nbgrader provides it)
c.CourseDirectory.course_id = os.environ.get("ATTNLAB_COURSE_ID", "attention")
c.Exchange.root = os.environ.get("ATTNLAB_EXCHANGE", "/srv/nbgrader/exchange")
c.Execute.timeout = 300  # the experiment cell trains two small models
if os.environ.get("ATTNLAB_ROLE") == "instructor":
    c.CourseDirectory.root = os.path.expanduser("~/attention-course")
