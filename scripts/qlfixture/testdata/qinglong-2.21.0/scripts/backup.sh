#!/usr/bin/env bash
# cron: 15 3 * * *
echo backup
