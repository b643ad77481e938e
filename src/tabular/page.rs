//! Page arithmetic: how many whole rows fit under `max_rows` and the byte
//! ceiling, and what the next offset is. Pure; the readers supply sizes.

use super::TruncationReason;

/// The most bytes a page's structured body (headers, rows and the
/// pagination fields, as compact JSON) may take: 96 KiB, so that a page
/// and its text part fit a tool response's 128 KiB bound whole.
pub const PAGE_CEILING_BYTES: usize = 96 * 1024;

/// Where a page ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageEnd {
    /// Rows in the page.
    pub rows: u64,
    /// Why it stopped before the end of the data; `None` at the end.
    pub reason: Option<TruncationReason>,
}

/// Why no page can be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageError {
    /// The headers and pagination fields alone take this many bytes.
    HeadersTooLarge { bytes: usize },
    /// The row at this data offset alone takes the page past the ceiling.
    RowTooLarge { offset: u64, bytes: usize },
}

/// Fits rows into a page.
///
/// `empty_page_bytes` is the page's size with no rows (measured with the
/// longest pagination values, so adding them later cannot push it over);
/// `row_bytes` yields the compact-JSON size of each row from `offset` on,
/// for at most `max_rows` rows and no further than `total`.
pub fn fit(
    empty_page_bytes: usize,
    offset: u64,
    max_rows: u64,
    total: u64,
    ceiling: usize,
    mut row_bytes: impl FnMut(u64) -> usize,
) -> Result<PageEnd, PageError> {
    if empty_page_bytes > ceiling {
        return Err(PageError::HeadersTooLarge {
            bytes: empty_page_bytes,
        });
    }
    let end = offset.saturating_add(max_rows).min(total);
    let mut used = empty_page_bytes;
    let mut index = offset;
    while index < end {
        let separator = usize::from(index > offset);
        let bytes = row_bytes(index);
        if used.saturating_add(bytes).saturating_add(separator) > ceiling {
            if index == offset {
                return Err(PageError::RowTooLarge { offset, bytes });
            }
            return Ok(PageEnd {
                rows: index - offset,
                reason: Some(TruncationReason::MaxBytes),
            });
        }
        used += bytes + separator;
        index += 1;
    }
    Ok(PageEnd {
        rows: end.saturating_sub(offset),
        reason: (end < total).then_some(TruncationReason::MaxRows),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CEILING: usize = 100;

    fn ten_byte_rows(offset: u64, max_rows: u64, total: u64) -> Result<PageEnd, PageError> {
        fit(20, offset, max_rows, total, CEILING, |_| 10)
    }

    #[test]
    fn max_rows_binds_first() {
        assert_eq!(
            ten_byte_rows(0, 3, 10),
            Ok(PageEnd {
                rows: 3,
                reason: Some(TruncationReason::MaxRows)
            })
        );
    }

    #[test]
    fn bytes_bind_first_with_separators_counted() {
        // 20 + 10 + 6 * 11 = 96; a seventh row would make 107.
        assert_eq!(
            ten_byte_rows(0, 100, 10),
            Ok(PageEnd {
                rows: 7,
                reason: Some(TruncationReason::MaxBytes)
            })
        );
    }

    #[test]
    fn the_last_page_has_no_reason() {
        assert_eq!(
            ten_byte_rows(8, 5, 10),
            Ok(PageEnd {
                rows: 2,
                reason: None
            })
        );
        assert_eq!(
            ten_byte_rows(10, 5, 10),
            Ok(PageEnd {
                rows: 0,
                reason: None
            })
        );
        assert_eq!(
            ten_byte_rows(50, 5, 10),
            Ok(PageEnd {
                rows: 0,
                reason: None
            })
        );
        // Exactly max_rows left: the end, not a truncation.
        assert_eq!(
            ten_byte_rows(7, 3, 10),
            Ok(PageEnd {
                rows: 3,
                reason: None
            })
        );
    }

    #[test]
    fn a_row_that_fits_exactly_is_kept() {
        assert_eq!(
            fit(20, 0, 10, 1, CEILING, |_| 80),
            Ok(PageEnd {
                rows: 1,
                reason: None
            })
        );
    }

    #[test]
    fn oversized_rows_and_headers_are_errors() {
        assert_eq!(
            fit(20, 4, 10, 9, CEILING, |_| 81),
            Err(PageError::RowTooLarge {
                offset: 4,
                bytes: 81
            })
        );
        assert_eq!(
            fit(101, 0, 10, 9, CEILING, |_| 1),
            Err(PageError::HeadersTooLarge { bytes: 101 })
        );
    }

    #[test]
    fn a_large_row_later_in_the_page_ends_it_by_bytes() {
        let sizes = [10, 10, 90, 10];
        assert_eq!(
            fit(20, 0, 10, 4, CEILING, |index| sizes[index as usize]),
            Ok(PageEnd {
                rows: 2,
                reason: Some(TruncationReason::MaxBytes)
            })
        );
    }
}
