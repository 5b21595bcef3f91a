"""The canonical change record and the events it carries: what every stage reads."""
