//! Size estimates for the formats calamine reads whole (`.ods`, `.xls`).
//!
//! calamine turns every sheet of such a workbook into a dense grid when it
//! opens the file, so a tiny file can ask for gigabytes: an `.ods` row
//! repeated a million times, or an `.xls` with one cell in A1 and one in
//! IV65536. These scans read the file's own structure cheaply (streaming,
//! no cell values kept) and return an upper bound on the grid cells
//! calamine would allocate, all sheets together, so the reader can refuse
//! the file before calamine sees it.

use std::io::{BufRead, Read};

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

/// The most grid cells (all sheets together) a `.xls` or `.ods` file may
/// make calamine allocate: 4 million, some 220 MB at calamine's ~56 bytes a
/// cell (value plus formula text).
pub const MAX_GRID_CELLS: u64 = 4_000_000;

/// calamine's own caps on an `.ods` table.
const ODS_MAX_ROWS: u64 = 1_048_576;
const ODS_MAX_COLUMNS: u64 = 16_384;

/// Why a scan could not read the file's structure.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// `content.xml` is not well-formed XML.
    #[error(transparent)]
    Xml(#[from] quick_xml::Error),
    /// The workbook stream could not be read.
    #[error(transparent)]
    Read(std::io::Error),
    /// The stream ends inside a record.
    #[error("a record is cut off")]
    CutOff(#[source] std::io::Error),
}

/// The span of one sheet's non-empty cells as calamine lays it out.
#[derive(Debug, Default, Clone, Copy)]
struct Span {
    first_row: Option<u64>,
    last_row: u64,
    width: u64,
}

impl Span {
    fn cells(self) -> u64 {
        self.first_row.map_or(0, |first| {
            (self.last_row - first).saturating_mul(self.width)
        })
    }
}

fn number_attribute(element: &BytesStart<'_>, name: &str) -> u64 {
    element
        .try_get_attribute(name)
        .ok()
        .flatten()
        .and_then(|attribute| attribute.value.parse().ok())
        .unwrap_or(1)
}

fn has_attribute(element: &BytesStart<'_>, name: &str) -> bool {
    element.try_get_attribute(name).ok().flatten().is_some()
}

/// An upper bound on the grid cells calamine allocates for the tables of
/// an `.ods` `content.xml`. A cell counts as holding a value when it has a
/// value type, a formula or any content.
pub fn ods_grid_cells(content: impl BufRead) -> Result<u64, ScanError> {
    let mut reader = Reader::from_reader(content);
    let mut buffer = Vec::new();
    let mut total: u64 = 0;
    let mut span = Span::default();
    let mut row: u64 = 0;
    // Within a row: its repeat count, the next column, the end of its last
    // value cell.
    let mut row_repeats: u64 = 0;
    let mut column: u64 = 0;
    let mut row_width: u64 = 0;
    loop {
        let event = reader.read_event_into(&mut buffer)?;
        let (element, has_content) = match &event {
            Event::Start(element) => (Some(element), true),
            Event::Empty(element) => (Some(element), false),
            Event::End(end) => {
                match end.name().as_ref() {
                    "table:table-row" => {
                        end_row(&mut span, &mut row, row_repeats, row_width);
                    }
                    "table:table" => {
                        total = total.saturating_add(span.cells());
                        span = Span::default();
                        row = 0;
                    }
                    _ => {}
                }
                buffer.clear();
                continue;
            }
            Event::Eof => break,
            _ => (None, false),
        };
        if let Some(element) = element {
            match element.name().as_ref() {
                "table:table-row" => {
                    row_repeats = number_attribute(element, "table:number-rows-repeated")
                        .min(ODS_MAX_ROWS.saturating_sub(row));
                    column = 0;
                    row_width = 0;
                    if !has_content {
                        end_row(&mut span, &mut row, row_repeats, row_width);
                    }
                }
                "table:table-cell" | "table:covered-table-cell" => {
                    let repeats = number_attribute(element, "table:number-columns-repeated");
                    column = column.saturating_add(repeats).min(ODS_MAX_COLUMNS);
                    if has_content
                        || has_attribute(element, "office:value-type")
                        || has_attribute(element, "table:formula")
                    {
                        row_width = column;
                    }
                }
                _ => {}
            }
        }
        buffer.clear();
    }
    Ok(total.saturating_add(span.cells()))
}

fn end_row(span: &mut Span, row: &mut u64, repeats: u64, width: u64) {
    let next = row.saturating_add(repeats);
    if width > 0 {
        span.first_row.get_or_insert(*row);
        span.last_row = next;
        span.width = span.width.max(width);
    }
    *row = next;
}

/// An upper bound on the grid cells calamine allocates for the sheets of
/// an `.xls` workbook stream (BIFF5 or BIFF8): per sheet, the larger of
/// the bounding box of its cell records and the box its DIMENSIONS record
/// declares (calamine reserves that much up front).
pub fn xls_grid_cells(mut stream: impl Read) -> Result<u64, ScanError> {
    let mut total: u64 = 0;
    let mut sheet = XlsSheet::default();
    let mut depth: u32 = 0;
    let mut header = [0u8; 4];
    let mut body = Vec::new();
    loop {
        match stream.read_exact(&mut header) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(error) => return Err(ScanError::Read(error)),
        }
        let kind = u16::from_le_bytes([header[0], header[1]]);
        let length = usize::from(u16::from_le_bytes([header[2], header[3]]));
        body.resize(length, 0);
        stream.read_exact(&mut body).map_err(ScanError::CutOff)?;
        let word = |at: usize| {
            body.get(at..at + 2)
                .map(|bytes| u16::from_le_bytes([bytes[0], bytes[1]]))
        };
        let long = |at: usize| {
            body.get(at..at + 4)
                .map(|bytes| u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
        };
        match kind {
            // NUMBER, LABELSST, RK, BLANK, BOOLERR, FORMULA, LABEL, RSTRING:
            // row, column.
            0x0203 | 0x00FD | 0x027E | 0x0201 | 0x0205 | 0x0006 | 0x0204 | 0x00D6 => {
                if let (Some(row), Some(col)) = (word(0), word(2)) {
                    sheet.cell(row, col, col);
                }
            }
            // MULRK, MULBLANK: row, first column, ..., last column.
            0x00BD | 0x00BE => {
                if let (Some(row), Some(first), Some(last)) =
                    (word(0), word(2), length.checked_sub(2).and_then(word))
                {
                    sheet.cell(row, first.min(last), first.max(last));
                }
            }
            // DIMENSIONS, read as calamine reads it.
            0x0200 => {
                let declared = match length {
                    10 => word(0).zip(word(2)).zip(word(4).zip(word(6))).map(
                        |((rf, rl), (cf, cl))| {
                            (u32::from(rf), u32::from(rl), u32::from(cf), u32::from(cl))
                        },
                    ),
                    14 | 16 => long(0)
                        .zip(long(4))
                        .zip(word(8).zip(word(10)))
                        .map(|((rf, rl), (cf, cl))| (rf, rl, u32::from(cf), u32::from(cl))),
                    _ => None,
                };
                if let Some(declared) = declared {
                    sheet.declared = sheet.declared.max(declared_cells(declared));
                }
            }
            // BOF: a substream (a sheet, or a chart inside one) starts.
            0x0809 => depth = depth.saturating_add(1),
            // EOF: the substream ends; a sheet ends with its outermost one.
            0x000A => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    total = total.saturating_add(std::mem::take(&mut sheet).cells());
                }
            }
            _ => {}
        }
    }
    Ok(total.saturating_add(sheet.cells()))
}

/// What one `.xls` sheet makes calamine allocate.
#[derive(Debug, Default, Clone, Copy)]
struct XlsSheet {
    /// Rows and columns spanned by cell records: top, bottom, left, right.
    area: Option<(u16, u16, u16, u16)>,
    /// Cells its DIMENSIONS record declares.
    declared: u64,
}

impl XlsSheet {
    fn cell(&mut self, row: u16, first: u16, last: u16) {
        self.area = Some(match self.area {
            None => (row, row, first, last),
            Some((top, bottom, left, right)) => (
                top.min(row),
                bottom.max(row),
                left.min(first),
                right.max(last),
            ),
        });
    }

    fn cells(self) -> u64 {
        area_cells(self.area).max(self.declared)
    }
}

/// The cells calamine reserves for a DIMENSIONS record (first row, last
/// row + 1, first column, last column + 1); a box calamine would compute
/// with a negative side counts as unbounded.
fn declared_cells((first_row, rows_end, mut first_col, cols_end): (u32, u32, u32, u32)) -> u64 {
    if first_col > 0xFF || cols_end < first_col {
        first_col = 0;
    }
    if rows_end == 0 || cols_end == 0 {
        return 1;
    }
    let (last_row, last_col) = (rows_end - 1, cols_end - 1);
    if last_row < first_row || last_col < first_col {
        return u64::MAX;
    }
    (u64::from(last_row - first_row) + 1).saturating_mul(u64::from(last_col - first_col) + 1)
}

fn area_cells(area: Option<(u16, u16, u16, u16)>) -> u64 {
    area.map_or(0, |(top, bottom, left, right)| {
        (u64::from(bottom - top) + 1) * (u64::from(right - left) + 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ods(rows: &str) -> u64 {
        let content = format!(
            "<office:document-content><office:body><office:spreadsheet><table:table table:name=\"S\">{rows}</table:table></office:spreadsheet></office:body></office:document-content>"
        );
        ods_grid_cells(content.as_bytes()).unwrap()
    }

    const VALUE: &str = "<table:table-cell office:value-type=\"float\" office:value=\"1\"><text:p>1</text:p></table:table-cell>";

    #[test]
    fn ods_counts_the_box_of_value_cells_with_repeats() {
        assert_eq!(ods(""), 0);
        let row = format!("<table:table-row>{VALUE}{VALUE}</table:table-row>");
        assert_eq!(ods(&row.repeat(3)), 6);
        // LibreOffice's trailing filler: styled empty cells and rows.
        let filler = "<table:table-row table:number-rows-repeated=\"1048570\"><table:table-cell table:style-name=\"ce1\" table:number-columns-repeated=\"1024\"/></table:table-row>";
        assert_eq!(ods(&format!("{row}{filler}")), 2);
        // Empty rows between value rows count.
        let gap = "<table:table-row table:number-rows-repeated=\"10\"><table:table-cell/></table:table-row>";
        assert_eq!(ods(&format!("{row}{gap}{row}")), 12 * 2);
    }

    #[test]
    fn an_ods_repeat_bomb_is_counted_in_full() {
        let bomb = "<table:table-row table:number-rows-repeated=\"1000000\"><table:table-cell table:number-columns-repeated=\"16384\" office:value-type=\"float\" office:value=\"1\"/></table:table-row>";
        assert_eq!(ods(bomb), 1_000_000 * 16_384);
        assert!(ods(bomb) > MAX_GRID_CELLS);
    }

    fn record(kind: u16, body: &[u8]) -> Vec<u8> {
        let mut bytes = kind.to_le_bytes().to_vec();
        bytes.extend((body.len() as u16).to_le_bytes());
        bytes.extend(body);
        bytes
    }

    fn number(row: u16, col: u16) -> Vec<u8> {
        let mut body = row.to_le_bytes().to_vec();
        body.extend(col.to_le_bytes());
        body.extend([0; 10]);
        record(0x0203, &body)
    }

    #[test]
    fn xls_counts_each_sheets_bounding_box() {
        let mut stream = Vec::new();
        stream.extend(record(0x0809, &[0; 16]));
        stream.extend(record(0x000A, &[]));
        stream.extend(record(0x0809, &[0; 16]));
        stream.extend(number(0, 0));
        stream.extend(number(65_535, 255));
        stream.extend(record(0x000A, &[]));
        stream.extend(record(0x0809, &[0; 16]));
        stream.extend(number(3, 2));
        // MULBLANK on row 4, columns 1..=5.
        stream.extend(record(0x00BE, &[4, 0, 1, 0, 0, 0, 0, 0, 5, 0]));
        stream.extend(record(0x000A, &[]));
        assert_eq!(
            xls_grid_cells(stream.as_slice()).unwrap(),
            65_536 * 256 + 2 * 5
        );
        // A chart substream inside a sheet does not split its box.
        let mut nested = Vec::new();
        nested.extend(record(0x0809, &[0; 16]));
        nested.extend(number(0, 0));
        nested.extend(record(0x0809, &[0; 16]));
        nested.extend(record(0x000A, &[]));
        nested.extend(number(999, 9));
        nested.extend(record(0x000A, &[]));
        assert_eq!(xls_grid_cells(nested.as_slice()).unwrap(), 1000 * 10);
        // A DIMENSIONS record declaring more than the cells span counts.
        let mut declared = Vec::new();
        declared.extend(record(0x0809, &[0; 16]));
        let mut dimensions = 0u32.to_le_bytes().to_vec();
        dimensions.extend(1_000_000u32.to_le_bytes());
        dimensions.extend([0, 0, 100, 0, 0, 0]);
        declared.extend(record(0x0200, &dimensions));
        declared.extend(number(0, 0));
        declared.extend(record(0x000A, &[]));
        assert_eq!(xls_grid_cells(declared.as_slice()).unwrap(), 100_000_000);
        // Cut inside the MULBLANK record.
        let cut = &stream[..stream.len() - 7];
        assert!(matches!(xls_grid_cells(cut), Err(ScanError::CutOff(_))));
        assert_eq!(
            xls_grid_cells(cut).unwrap_err().to_string(),
            "a record is cut off"
        );
    }
}
