"""Code hosts (GitHub, GitLab): the sticky plan comment on a pull or merge request."""
