"""A braille-dot canvas: each terminal cell holds 2×4 dots, so lines look smooth in plain text."""

from __future__ import annotations

_DOT_BITS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [row][column] within a cell


class BrailleCanvas:
    """Width × height cells; `dot(x, y)` in dot coordinates, y = 0 at the top."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = max(width, 1), max(height, 1)
        self.cells = [[0] * self.width for _ in range(self.height)]
        self.overlay: dict[tuple[int, int], tuple[str, str]] = {}  # (col, row) → (character, style)
        self.styles: dict[tuple[int, int], str] = {}

    @property
    def dot_width(self) -> int:
        return self.width * 2

    @property
    def dot_height(self) -> int:
        return self.height * 4

    def dot(self, x: int, y: int, style: str = "") -> None:
        if 0 <= x < self.dot_width and 0 <= y < self.dot_height:
            col, row = x // 2, y // 4
            self.cells[row][col] |= _DOT_BITS[y % 4][x % 2]
            if style:
                self.styles[(col, row)] = style

    def line(self, x0: int, y0: int, x1: int, y1: int, style: str = "") -> None:
        """Bresenham line between two dots."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            self.dot(x0, y0, style)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def mark(self, col: int, row: int, character: str, style: str = "") -> None:
        """A character drawn over the dots of one cell (point markers)."""
        if 0 <= col < self.width and 0 <= row < self.height:
            self.overlay[(col, row)] = (character, style)

    def rows(self) -> list[list[tuple[str, str]]]:
        """Each row as (character, style) cells."""
        out = []
        for row in range(self.height):
            cells = []
            for col in range(self.width):
                if (col, row) in self.overlay:
                    cells.append(self.overlay[(col, row)])
                else:
                    bits = self.cells[row][col]
                    cells.append((chr(0x2800 + bits) if bits else " ", self.styles.get((col, row), "")))
            out.append(cells)
        return out
