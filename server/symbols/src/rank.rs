//! Orders answers by nearness to a file: the same file first, then the same
//! directory, then the fewest directory steps apart; ties by path and line.

/// The sort key of `file` seen from `near` (smaller is nearer).
pub(crate) fn nearness(file: &str, near: Option<&str>) -> (u8, usize) {
    let Some(near) = near.map(|n| n.trim_start_matches("./")) else { return (0, 0) };
    if file == near {
        return (0, 0);
    }
    let (dir, near_dir) = (parent(file), parent(near));
    if dir == near_dir {
        return (1, 0);
    }
    let a: Vec<&str> = dir.split('/').filter(|c| !c.is_empty()).collect();
    let b: Vec<&str> = near_dir.split('/').filter(|c| !c.is_empty()).collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    (2, (a.len() - common) + (b.len() - common))
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}
