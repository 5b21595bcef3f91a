"""Procedure templates, one folder per dialect (package data of applier as applier.sql)."""
