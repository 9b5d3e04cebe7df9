"""The viewer's pages, one module per area; each exports `routes`."""
