//! Slots in pages of fixed size. A `Vec` that grows by doubling holds the old and the new
//! buffer at once while it copies, and leaves up to half of the new one unused: for the
//! flow table's entries (over 100 bytes each, hundreds of thousands of them) that is the
//! largest transient of a first sync. Pages are allocated one at a time and never move.

use std::ops::{Index, IndexMut};

/// Slots per page.
const PAGE: usize = 1024;

/// `Option<T>` slots indexed from 0, appended at the end.
#[derive(Debug)]
pub struct Pages<T> {
    pages: Vec<Box<[Option<T>]>>,
    len: usize,
}

impl<T> Default for Pages<T> {
    fn default() -> Self {
        Self {
            pages: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Pages<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    /// Slots allocated (the last page's unused ones included).
    pub fn capacity(&self) -> usize {
        self.pages.len() * PAGE
    }

    /// Allocates the pages `additional` more slots need.
    pub fn reserve(&mut self, additional: usize) {
        while self.capacity() < self.len + additional {
            self.pages.push(empty_page());
        }
    }

    pub fn push(&mut self, value: Option<T>) {
        if self.len == self.capacity() {
            self.pages.push(empty_page());
        }
        let i = self.len;
        self.len += 1;
        self[i] = value;
    }

    pub fn get(&self, i: usize) -> Option<&Option<T>> {
        (i < self.len).then(|| &self.pages[i / PAGE][i % PAGE])
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut Option<T>> {
        (i < self.len).then(|| &mut self.pages[i / PAGE][i % PAGE])
    }

    /// Every slot in index order.
    pub fn iter(&self) -> impl Iterator<Item = &Option<T>> {
        self.pages.iter().flat_map(|p| p.iter()).take(self.len)
    }
}

fn empty_page<T>() -> Box<[Option<T>]> {
    std::iter::repeat_with(|| None).take(PAGE).collect()
}

impl<T> Index<usize> for Pages<T> {
    type Output = Option<T>;

    fn index(&self, i: usize) -> &Option<T> {
        self.get(i)
            .unwrap_or_else(|| panic!("slot {i} of {}", self.len))
    }
}

impl<T> IndexMut<usize> for Pages<T> {
    fn index_mut(&mut self, i: usize) -> &mut Option<T> {
        let len = self.len;
        self.get_mut(i)
            .unwrap_or_else(|| panic!("slot {i} of {len}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_keep_their_index_across_pages() {
        let mut p: Pages<u32> = Pages::default();
        assert!(p.len() == 0 && p.get(0).is_none());
        for i in 0..(2 * PAGE + 3) {
            p.push((i % 5 != 0).then_some(i as u32));
        }
        assert_eq!(p.len(), 2 * PAGE + 3);
        assert_eq!(p.capacity(), 3 * PAGE);
        assert_eq!(p[PAGE + 2], Some(PAGE as u32 + 2));
        // 2045 is a multiple of 5: an empty slot on the second page.
        assert_eq!(p[2045], None);
        p[2045] = Some(7);
        assert_eq!(p.get(2045), Some(&Some(7)));
        assert!(p.get(2 * PAGE + 3).is_none());
        let all: Vec<u32> = p.iter().flatten().copied().collect();
        assert_eq!(all.len(), (2 * PAGE + 3) - (2 * PAGE + 3).div_ceil(5) + 1);
        assert_eq!(p.iter().count(), 2 * PAGE + 3);
        p.reserve(PAGE);
        assert_eq!(p.capacity(), 4 * PAGE);
    }
}
