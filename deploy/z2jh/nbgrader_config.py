# nbgrader's global configuration in the single-user image (/etc/jupyter/nbgrader_config.py):
# the exchange is ngshare, reached through the hub's proxy as the service registered in
# deploy/z2jh/values.yaml (hub.services.ngshare), with the server's own API token.
from ngshare_exchange import configureExchange

c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)
configureExchange(c, "http://proxy-public/services/ngshare")
# Students see every course ngshare lists for them; an instructor's course folder sets its own
# CourseDirectory.course_id in its nbgrader_config.py (README, "Exercises in a course").
c.CourseDirectory.course_id = "*"
